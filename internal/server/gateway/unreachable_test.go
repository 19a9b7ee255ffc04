package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// errorTransport answers every call with status and a JSON body.
type errorTransport struct {
	status int
	body   string
}

func (e errorTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: e.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(e.body)), Request: r}, nil
}

// A provider (or the proxy in front of it) that answers 503 naming a
// socket address or a dial error is answered with a generic message in
// the client's dialect, with its status; the body goes to the log only.
// Sluice passed it through: "dial tcp 127.0.0.1:…" reached the client.
func TestUnreachableNamesNoAddress(t *testing.T) {
	for _, c := range []struct {
		name, path, model, body string
		status                  int
		generic                 bool
	}{
		{"a dial error", "/v1/chat/completions", "mock-gpt",
			`{"error":{"message":"upstream: dial tcp 127.0.0.1:8001: connect: connection refused","type":"server_error"}}`, 503, true},
		{"an IPv6 socket", "/v1/messages", "mock-claude",
			`{"type":"error","error":{"type":"overloaded_error","message":"no healthy upstream at [fd00::12]:8443"}}`, 529, true},
		{"a resolver's error, translated", "/v1/chat/completions", "mock-claude",
			`{"type":"error","error":{"type":"api_error","message":"lookup vllm-0.internal: no such host"}}`, 502, true},
		{"an overload in words is passed on", "/v1/chat/completions", "mock-gpt",
			`{"error":{"message":"The server is overloaded; retry later","type":"server_error"}}`, 503, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, mock.Config{}, func(cfg *config.Config) {
				cfg.Log.Format = "json"
				for i := range cfg.Providers {
					cfg.Providers[i].Breaker = &config.Breaker{MinCalls: 100}
				}
			}, func(o *gateway.Options) { o.Transport = errorTransport{c.status, c.body} })
			body := `{"model":"` + c.model + `","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
			status, _, got := s.do(c.path, body, nil)
			if status < 500 {
				t.Fatalf("status %d: %s", status, got)
			}
			leaked := strings.Contains(string(got), "127.0.0.1") || strings.Contains(string(got), "fd00::12") ||
				strings.Contains(string(got), "dial") || strings.Contains(string(got), "no such host")
			if leaked {
				t.Fatalf("status %d: the answer names the address or the network error: %s", status, got)
			}
			if c.generic != strings.Contains(string(got), "could not reach a service it depends on") {
				t.Errorf("status %d: %s; want the generic message: %v", status, got, c.generic)
			}
			if c.generic {
				waitFor(t, "the log to have the detail", func() bool { return strings.Contains(s.logText(), "names a network address") })
			}
		})
	}
}
