package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// strictProvider stands in for a provider that refuses a call carrying
// an organization header the key does not belong to, and otherwise
// answers; it remembers the headers of the last call.
type strictProvider struct {
	last  atomic.Pointer[http.Header]
	calls atomic.Int64
}

func (p *strictProvider) RoundTrip(r *http.Request) (*http.Response, error) {
	p.calls.Add(1)
	h := r.Header.Clone()
	p.last.Store(&h)
	io.Copy(io.Discard, r.Body)
	if r.Header.Get("OpenAI-Organization") != "" {
		return jsonResponse(r, 401, `{"error":{"message":"Incorrect API key provided: Bearer `+r.Header.Get("Authorization")[7:]+` is not in this organization","type":"invalid_request_error"}}`), nil
	}
	return jsonResponse(r, 200, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`), nil
}

func jsonResponse(r *http.Request, status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r, ContentLength: int64(len(body))}
}

// One client's headers cannot open the breaker for everyone: identity
// and forwarding headers never reach the provider, and only failures the
// provider caused count against it.
func TestClientHeadersCannotTripTheBreaker(t *testing.T) {
	t.Setenv("SLUICE_TEST_KEY", "sk-gateway-secret-0123456789")
	p := &strictProvider{}
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].APIKeyEnv = "SLUICE_TEST_KEY"
		c.Providers[0].Breaker = &config.Breaker{MinCalls: 5, Window: config.Duration(10 * time.Second)}
	}, func(o *gateway.Options) { o.Transport = p })
	hostile := map[string]string{
		"OpenAI-Organization": "org-bogus", "OpenAI-Project": "proj-bogus",
		"X-Forwarded-For": "10.9.8.7", "Forwarded": "for=10.9.8.7", "X-Real-Ip": "10.9.8.7",
		"Cookie": "session=1", "X-Stainless-Os": "Linux", "Authorization": "Bearer sk-client-own-key",
	}
	for range 30 {
		if status, _, body := s.do("/v1/chat/completions", chatBody, hostile); status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
	}
	h := *p.last.Load()
	for k := range hostile {
		if k == "Authorization" {
			continue
		}
		if v := h.Get(k); v != "" {
			t.Errorf("the client's %s reached the provider: %q", k, v)
		}
	}
	if h.Get("Authorization") != "Bearer sk-gateway-secret-0123456789" {
		t.Errorf("the provider saw Authorization %q, want the gateway's key", h.Get("Authorization"))
	}
	if st := s.gw.Runner().BreakerStats()[0]; st.State != breaker.Closed || st.Errors != 0 {
		t.Errorf("breaker %v with %d errors after a client's hostile headers", st.State, st.Errors)
	}
}

// A provider that refuses the gateway's own key: the client is not told
// its key is wrong, nor shown the provider's body (which echoes the key);
// it gets a 502 naming the provider, and the operator a log line naming
// the variable to fix.
func TestProviderRefusingTheGatewaysKey(t *testing.T) {
	t.Setenv("SLUICE_TEST_KEY", "sk-gateway-secret-0123456789")
	p := &strictProvider{}
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].APIKeyEnv = "SLUICE_TEST_KEY"
		c.Providers[0].Headers = map[string]string{"OpenAI-Organization": "org-misconfigured"}
	}, func(o *gateway.Options) { o.Transport = p })
	status, hdr, body := s.do("/v1/chat/completions", chatBody, nil)
	if status != 502 || errorType(t, body) != "upstream_error" || !strings.Contains(string(body), "refused the gateway's credentials") {
		t.Fatalf("status %d: %s", status, body)
	}
	for _, where := range []string{string(body), s.logText(), headerText(hdr)} {
		if strings.Contains(where, "sk-gateway-secret") {
			t.Fatalf("the gateway's key leaked: %s", where)
		}
	}
	if !strings.Contains(s.logText(), "api_key_env=SLUICE_TEST_KEY") {
		t.Errorf("the operator is not told which key to fix:\n%s", s.logText())
	}
	// The operator's own headers do reach the provider.
	if got := (*p.last.Load()).Get("OpenAI-Organization"); got != "org-misconfigured" {
		t.Errorf("providers[].headers not sent: OpenAI-Organization %q", got)
	}
}

func headerText(h http.Header) string {
	var b strings.Builder
	h.Write(&b)
	return b.String()
}

// forward_headers lets an operator pass on what a self-hosted provider
// needs; the provider's API headers pass by default.
func TestForwardHeaders(t *testing.T) {
	p := &strictProvider{}
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].ForwardHeaders = []string{"X-Trace-Id"}
	}, func(o *gateway.Options) { o.Transport = p })
	s.do("/v1/chat/completions", chatBody, map[string]string{"X-Trace-Id": "t-1", "OpenAI-Beta": "assistants=v2", "X-Other": "no"})
	h := *p.last.Load()
	if h.Get("X-Trace-Id") != "t-1" || h.Get("OpenAI-Beta") != "assistants=v2" || h.Get("X-Other") != "" || h.Get("User-Agent") != "sluice" {
		t.Fatalf("provider saw %v", h)
	}
}

// The client's query string does not reach the provider: a provider that
// routes on one (a version parameter) would let one client's query fail
// its calls for everyone.
func TestClientQueryStringIsNotForwarded(t *testing.T) {
	var seen atomic.Pointer[string]
	s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) {
		o.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			q := r.URL.RawQuery
			seen.Store(&q)
			return jsonResponse(r, 200, `{"choices":[],"usage":{"completion_tokens":0}}`), nil
		})
	})
	if status, _, body := s.do("/v1/chat/completions?api-version=bogus&x=1", chatBody, nil); status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if q := *seen.Load(); q != "" {
		t.Fatalf("the provider saw the client's query %q", q)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
