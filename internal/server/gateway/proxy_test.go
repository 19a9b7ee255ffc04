package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

const chatBody = `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}],"x_vendor_field":{"keep":[1,2,3]},"temperature":0.25}`

func TestPassThroughRewritesOnlyModelAndSwapsCredentials(t *testing.T) {
	t.Setenv("SLUICE_TEST_OPENAI_KEY", "sk-provider-secret")
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].APIKeyEnv = "SLUICE_TEST_OPENAI_KEY"
	})
	status, hdr, body := s.do("/v1/chat/completions", chatBody, map[string]string{
		"Authorization": "Bearer sk-client-key",
		"Connection":    "X-Hop",
		"X-Hop":         "must-not-pass",
	})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	v := decode(t, body)
	if _, ok := v["choices"]; !ok {
		t.Fatalf("no choices in %s", body)
	}
	last := s.mock.LastRequest()
	want := strings.Replace(chatBody, `"model":"mock-gpt"`, `"model":"mock-gpt-4o"`, 1)
	if string(last.Body) != want {
		t.Errorf("upstream body:\n got %s\nwant %s", last.Body, want)
	}
	if last.Authorization != "Bearer sk-provider-secret" {
		t.Errorf("upstream Authorization = %q, want the provider's key", last.Authorization)
	}
	if last.Header.Get("X-Hop") != "" {
		t.Errorf("hop-by-hop header X-Hop reached the provider")
	}
	if hdr.Get("X-Request-Id") == "" {
		t.Errorf("provider's x-request-id did not reach the client; headers %v", hdr)
	}
	if strings.Contains(s.logText(), "sk-provider-secret") || strings.Contains(s.logText(), "sk-client-key") {
		t.Errorf("a key leaked into the log:\n%s", s.logText())
	}
}

func TestEndpoints(t *testing.T) {
	s := newStack(t, mock.Config{}, nil)
	cases := []struct {
		name, path, body string
		hdr              map[string]string
		field            string
	}{
		{"completions", "/v1/completions", `{"model":"mock-gpt","prompt":"hi"}`, nil, "choices"},
		{"embeddings", "/v1/embeddings", `{"model":"mock-embed","input":["a","b"]}`, nil, "data"},
		{"messages", "/v1/messages", `{"model":"mock-claude","max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`,
			map[string]string{"anthropic-version": "2023-06-01", "x-api-key": "client"}, "content"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := s.do(c.path, c.body, c.hdr)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if _, ok := decode(t, body)[c.field]; !ok {
				t.Fatalf("no %q in %s", c.field, body)
			}
		})
	}
	// Each API lists every model, in its own shape; the Anthropic caller
	// is told apart by anthropic-version.
	t.Run("models", func(t *testing.T) {
		list := func(hdr map[string]string) string {
			req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/models", nil)
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		openai := list(nil)
		if !strings.Contains(openai, `"mock-gpt"`) || !strings.Contains(openai, `"mock-claude"`) || !strings.Contains(openai, `"object":"list"`) {
			t.Fatalf("OpenAI model list: %s", openai)
		}
		anthropic := list(map[string]string{"anthropic-version": "2023-06-01"})
		if !strings.Contains(anthropic, `"mock-claude"`) || !strings.Contains(anthropic, `"mock-gpt"`) || !strings.Contains(anthropic, `"has_more":false`) {
			t.Fatalf("Anthropic model list: %s", anthropic)
		}
		// An x-api-key alone is not Anthropic: OpenAI-compatible clients send it too.
		if l := list(map[string]string{"x-api-key": "k"}); !strings.Contains(l, `"object":"list"`) {
			t.Fatalf("x-api-key without anthropic-version got: %s", l)
		}
	})
}

// The client's first event must not wait for the upstream's last.
func TestStreamingRelaysFirstEventBeforeUpstreamFinishes(t *testing.T) {
	s := newStack(t, mock.Config{TTFT: 10 * time.Millisecond, TPOT: 100 * time.Millisecond}, nil)
	for _, c := range []struct{ name, path, body string }{
		{"openai", "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"anthropic", "/v1/messages", `{"model":"mock-claude","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			resp, err := s.post(context.Background(), c.path, c.body, map[string]string{"X-Mock-Output-Tokens": "20"})
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Fatalf("content-type %q", ct)
			}
			var first time.Duration
			events := 0
			sseEvents(resp.Body, func(string) bool {
				if events == 0 {
					first = time.Since(start)
					if st := s.mock.Stats(); st.InFlight != 1 {
						t.Errorf("upstream in flight = %d at first event; want 1 (still generating)", st.InFlight)
					}
				}
				events++
				return true
			})
			total := time.Since(start)
			// 20 tokens at 100 ms each take ~2 s; the first must come long before.
			if first > 500*time.Millisecond || total < time.Second {
				t.Fatalf("first event after %v, whole stream %v: the relay buffered", first, total)
			}
			if events < 20 {
				t.Fatalf("got %d events, want at least 20", events)
			}
			// The engine's TPOT signal needs the output length: from usage
			// when the stream carries it, else from the event count.
			waitFor(t, "the request log line", func() bool { return strings.Count(s.logText(), "msg=request") >= 1 })
			if !strings.Contains(s.logText(), "output_tokens=20") {
				t.Errorf("log lacks the output token count:\n%s", s.logText())
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) { c.MaxBodyBytes = 1024 })
	anthropic := map[string]string{"anthropic-version": "2023-06-01"}
	cases := []struct {
		name, path, body string
		hdr              map[string]string
		status           int
		typ, mentions    string
	}{
		{"malformed json", "/v1/chat/completions", `{"model":"mock-gpt",`, nil, 400, "invalid_request_error", "not valid JSON"},
		{"not an object", "/v1/chat/completions", `[1,2]`, nil, 400, "invalid_request_error", "JSON object"},
		{"no model", "/v1/chat/completions", `{"messages":[]}`, nil, 400, "invalid_request_error", `is required`},
		{"model not a string", "/v1/chat/completions", `{"model":7}`, nil, 400, "invalid_request_error", "must be a string"},
		// encoding/json matches keys in any case, so Go-based upstreams
		// would take "Model" for the model the allow-list never saw.
		{"case-variant model", "/v1/chat/completions", `{"model":"mock-gpt","Model":"other"}`, nil, 400, "invalid_request_error", `keys are case-sensitive`},
		{"duplicate model", "/v1/chat/completions", `{"model":"mock-gpt","model":"other"}`, nil, 400, "invalid_request_error", "appears twice"},
		{"anthropic malformed", "/v1/messages", `{`, anthropic, 400, "invalid_request_error", "not valid JSON"},
		{"oversized", "/v1/chat/completions", `{"model":"mock-gpt","pad":"` + strings.Repeat("x", 2048) + `"}`, nil, 413, "invalid_request_error", "max_body_bytes"},
		{"anthropic oversized", "/v1/messages", `{"model":"mock-claude","pad":"` + strings.Repeat("x", 2048) + `"}`, anthropic, 413, "request_too_large", "max_body_bytes"},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-9"}`, nil, 404, "invalid_request_error", "mock-gpt"},
		{"anthropic unknown model", "/v1/messages", `{"model":"claude-9"}`, anthropic, 404, "not_found_error", "not configured"},
		{"wrong dialect", "/v1/messages", `{"model":"mock-gpt"}`, anthropic, 400, "invalid_request_error", "openai-style"},
		{"bad priority", "/v1/chat/completions", chatBody, map[string]string{"X-Sluice-Priority": "urgent"}, 400, "invalid_request_error", "critical, interactive or background"},
		{"bad timeout", "/v1/chat/completions", chatBody, map[string]string{"X-Sluice-Timeout": "soon"}, 400, "invalid_request_error", "30s"},
		{"garbage upstream", "/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "malformed"}, 502, "upstream_error", "malformed"},
		{"upstream reset", "/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "reset"}, 502, "upstream_error", "could not be reached"},
		{"anthropic upstream garbage", "/v1/messages", `{"model":"mock-claude","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"X-Mock-Fail": "malformed", "anthropic-version": "2023-06-01"}, 502, "api_error", "malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := s.do(c.path, c.body, c.hdr)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			if typ := errorType(t, body); typ != c.typ {
				t.Errorf("error type %q, want %q", typ, c.typ)
			}
			if !strings.Contains(string(body), c.mentions) {
				t.Errorf("message does not mention %q: %s", c.mentions, body)
			}
			if c.path == "/v1/messages" && decode(t, body)["type"] != "error" {
				t.Errorf("anthropic error lacks type:error: %s", body)
			}
		})
	}
	t.Run("upstream error passes through", func(t *testing.T) {
		status, hdr, body := s.do("/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "429", "X-Mock-Retry-After": "3s"})
		if status != 429 || hdr.Get("Retry-After") != "3" {
			t.Fatalf("status %d retry-after %q: %s", status, hdr.Get("Retry-After"), body)
		}
		errorType(t, body)
	})
	t.Run("wrong method", func(t *testing.T) {
		resp, err := http.Get(s.url + "/v1/chat/completions")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, Allow %q, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"), b)
		}
		errorType(t, b)
	})
	t.Run("unknown route", func(t *testing.T) {
		status, _, body := s.do("/v1/nope", `{}`, nil)
		if status != 404 || !strings.Contains(string(body), "/v1/chat/completions") {
			t.Fatalf("status %d: %s", status, body)
		}
	})
}

// With critical keys declared, only those keys are critical: a declared
// key is critical without asking, and anyone else asking for critical is
// served as interactive. The keys never reach the log.
func TestCriticalIsReservedForDeclaredKeys(t *testing.T) {
	t.Setenv("SLUICE_TEST_CRITICAL_KEYS", "probe-key, ops-key")
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Admission.CriticalKeysEnv = "SLUICE_TEST_CRITICAL_KEYS"
	})
	cases := []struct {
		name string
		hdr  map[string]string
		want string
	}{
		{"declared key, no header", map[string]string{"Authorization": "Bearer ops-key"}, "critical"},
		{"declared key asks for less", map[string]string{"Authorization": "Bearer probe-key", "X-Sluice-Priority": "background"}, "background"},
		{"undeclared key asks for critical", map[string]string{"Authorization": "Bearer someone", "X-Sluice-Priority": "critical"}, "interactive"},
		{"anthropic-style declared key", map[string]string{"X-Api-Key": "ops-key"}, "critical"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(s.requestLog())
			if status, _, body := s.do("/v1/chat/completions", chatBody, c.hdr); status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			waitFor(t, "the log line", func() bool { return len(s.requestLog()) > before })
			if got := s.requestLog()[before].Priority; got != c.want {
				t.Errorf("priority %q, want %q", got, c.want)
			}
		})
	}
	if strings.Contains(s.logText(), "ops-key") || strings.Contains(s.logText(), "probe-key") {
		t.Error("a critical key leaked into the log")
	}
}

// sseTransport answers every call with one fixed SSE stream.
type sseTransport struct{ body string }

func (s sseTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(s.body)), Request: r}, nil
}

// A stream in a shape the first-token scan does not know, that ends
// properly, is still the answer: it is relayed whole, not failed.
func TestUnrecognisedStreamIsRelayed(t *testing.T) {
	const body = "data: {\"choices\":[{\"delta\":{\"audio\":{\"transcript\":\"hi\"}}}]}\n\ndata: [DONE]\n\n"
	s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) { o.Transport = sseTransport{body} })
	status, _, got := s.do("/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 200 || string(got) != body {
		t.Fatalf("status %d, body %q; want the stream relayed as sent", status, got)
	}
}
