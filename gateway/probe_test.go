package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/config"
	"github.com/sluice-gw/sluice/lifecycle"
)

// reasoningUpstream refuses max_tokens with a 400, as OpenAI's reasoning
// models do, and answers max_completion_tokens; it records the bodies.
type reasoningUpstream struct {
	mu     sync.Mutex
	bodies []string
}

func (u *reasoningUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.bodies = append(u.bodies, string(b))
	u.mu.Unlock()
	status, answer := 200, `{"choices":[{"message":{"role":"assistant","content":"p"}}]}`
	if !strings.Contains(string(b), `"max_completion_tokens":1`) {
		status, answer = 400, `{"error":{"message":"Unsupported parameter: 'max_tokens'"}}`
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(answer)), Request: r}, nil
}

// A probe refused for max_tokens is sent again with max_completion_tokens,
// which the provider's probes then keep using.
func TestProbeFallsBackToMaxCompletionTokens(t *testing.T) {
	up := &reasoningUpstream{}
	g, err := New(config.Default("http://127.0.0.1:1"), Options{Transport: up})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for i := range 2 {
		if o := g.probe(ctx, 0); o.Kind != lifecycle.OK {
			t.Fatalf("probe %d: %+v, want OK", i, o)
		}
	}
	if len(up.bodies) != 3 || !strings.Contains(up.bodies[0], `"max_tokens":1`) ||
		!strings.Contains(up.bodies[1], `"max_completion_tokens":1`) || !strings.Contains(up.bodies[2], `"max_completion_tokens":1`) {
		t.Errorf("probe bodies:\n%s", strings.Join(up.bodies, "\n"))
	}
}
