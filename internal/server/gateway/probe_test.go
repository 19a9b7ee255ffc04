package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
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
		if o := g.prober.probe(ctx, 0); o.Kind != lifecycle.OK {
			t.Fatalf("probe %d: %+v, want OK", i, o)
		}
	}
	if len(up.bodies) != 3 || !strings.Contains(up.bodies[0], `"max_tokens":1`) ||
		!strings.Contains(up.bodies[1], `"max_completion_tokens":1`) || !strings.Contains(up.bodies[2], `"max_completion_tokens":1`) {
		t.Errorf("probe bodies:\n%s", strings.Join(up.bodies, "\n"))
	}
}

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An azure provider's synthetic probe goes to its deployment's URL with
// its api-version and api-key, as its traffic does.
func TestProbeAzureDeployment(t *testing.T) {
	t.Setenv("SLUICE_TEST_AZURE_KEY", "azure-secret")
	var mu sync.Mutex
	var seen []string
	up := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		seen = append(seen, r.URL.String()+" "+r.Header.Get("Api-Key")+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"choices":[{"message":{"role":"assistant","content":"p"}}]}`)), Request: r}, nil
	})
	cfg := config.Default("http://127.0.0.1:1")
	cfg.Providers[0] = config.Provider{Name: "azure", Kind: config.KindAzure, BaseURL: "https://res.example",
		APIKeyEnv: "SLUICE_TEST_AZURE_KEY", APIVersion: "2024-10-21", Timeout: config.Duration(config.DefaultProviderTimeout)}
	for i := range cfg.Models {
		for j := range cfg.Models[i].Targets {
			if cfg.Models[i].Targets[j].Provider == "mock-openai" {
				cfg.Models[i].Targets[j] = config.Target{Provider: "azure", Model: "gpt-4o-prod"}
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{Transport: up})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if o := g.prober.probe(ctx, 0); o.Kind != lifecycle.OK {
		t.Fatalf("probe: %+v, want OK", o)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "https://res.example/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21 azure-secret "; len(seen) != 1 || seen[0] != want {
		t.Errorf("probe went to %q, want %q", seen, want)
	}
}
