package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// refusingUpstream answers every call with status and body, and counts
// the calls.
func refusingUpstream(t *testing.T, status int, body string) (string, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &calls
}

const (
	openaiTooLong    = `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	anthropicTooLong = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`
	contentFiltered  = `{"error":{"message":"The response was filtered due to the prompt triggering content management policy.","type":null,"param":"prompt","code":"content_filter"}}`
)

// contextStack: the client's model (mock-gpt for OpenAI, mock-claude for
// Anthropic) has the refusing upstream as its only target; with
// fallback, it names a "big" model served by the healthy mock, of the
// same API.
func contextStack(t *testing.T, kind, url string, fallback bool, edit func(*config.Model)) *stack {
	return newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 3}}, func(c *config.Config) {
		c.Providers = append(c.Providers, config.Provider{Name: "small", Kind: kind, BaseURL: url + "/v1", Timeout: config.Duration(5 * time.Second)})
		client, big := "mock-gpt", config.Target{Provider: "mock-openai", Model: "mock-gpt-4o"}
		if kind == "anthropic" {
			client, big = "mock-claude", config.Target{Provider: "mock-anthropic", Model: "mock-claude-sonnet"}
		}
		for i := range c.Models {
			m := &c.Models[i]
			if m.Name != client {
				continue
			}
			m.Targets = []config.Target{{Provider: "small", Model: "small-model"}}
			if fallback {
				m.ContextFallback = "big"
			}
			if edit != nil {
				edit(m)
			}
		}
		c.Models = append(c.Models, config.Model{Name: "big", Targets: []config.Target{big}})
	})
}

func contextRequest(kind string) (path, body string) {
	if kind == "anthropic" {
		return "/v1/messages", messagesBody
	}
	return "/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
}

// A context_length_exceeded answer goes to the model's context fallback,
// and is not resent to the target that refused it; without a fallback
// the client gets the provider's 400 with its message.
func TestContextLengthExceededGoesToTheFallback(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		tooLong := map[string]string{"openai": openaiTooLong, "anthropic": anthropicTooLong}[kind]
		t.Run(kind+"/fallback", func(t *testing.T) {
			url, calls := refusingUpstream(t, 400, tooLong)
			s := contextStack(t, kind, url, true, nil)
			path, body := contextRequest(kind)
			status, hdr, got := s.do(path, body, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, got)
			}
			if calls.Load() != 1 {
				t.Errorf("the refusing target saw %d calls, want 1", calls.Load())
			}
			if p := hdr.Get("X-Sluice-Provider"); p != "mock-"+kind {
				t.Errorf("answered by %q, want the fallback's provider", p)
			}
			if n := s.mock.Stats().Completed; n != 1 {
				t.Errorf("the fallback completed %d calls, want 1", n)
			}
		})
		t.Run(kind+"/no-fallback", func(t *testing.T) {
			url, calls := refusingUpstream(t, 400, tooLong)
			s := contextStack(t, kind, url, false, nil)
			path, body := contextRequest(kind)
			status, _, got := s.do(path, body, nil)
			if status != 400 || !strings.Contains(string(got), "too long") && !strings.Contains(string(got), "maximum context length") {
				t.Fatalf("status %d: %s; want the provider's 400 and message", status, got)
			}
			if calls.Load() != 1 {
				t.Errorf("the refusing target saw %d calls, want 1 (never resent)", calls.Load())
			}
			if n := s.mock.Stats().Total; n != 0 {
				t.Errorf("the mock saw %d calls, want none", n)
			}
		})
	}
}

// With the model's context window configured, a counted prompt over it
// goes to the fallback before any call: the small model sees none.
func TestContextWindowRoutesBeforeTheCall(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			url, calls := refusingUpstream(t, 400, map[string]string{"openai": openaiTooLong, "anthropic": anthropicTooLong}[kind])
			s := contextStack(t, kind, url, true, func(m *config.Model) { m.ContextWindow = 150 })
			path, body := contextRequest(kind)
			long := strings.Repeat("a long prompt of many words ", 40)
			body = strings.Replace(body, `"content":"hi"`, `"content":"`+long+`"`, 1)
			status, _, got := s.do(path, body, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, got)
			}
			if calls.Load() != 0 {
				t.Errorf("the small model saw %d calls, want none", calls.Load())
			}
			// A prompt that fits still goes to the model itself (which,
			// here, refuses it, and so sends it on).
			_, short := contextRequest(kind)
			if status, _, got := s.do(path, short, nil); status != 200 {
				t.Fatalf("short prompt: status %d: %s", status, got)
			}
			if calls.Load() != 1 {
				t.Errorf("the small model saw %d calls for a prompt that fits, want 1", calls.Load())
			}
		})
	}
}

// A content-filter 400 is not retried, on the target or its fallback,
// and its reason reaches the client.
func TestContentFilterIsNotRetried(t *testing.T) {
	url, calls := refusingUpstream(t, 400, contentFiltered)
	backup, addBackup := withBackup(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}})
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers = append(c.Providers, config.Provider{Name: "small", Kind: "openai", BaseURL: url + "/v1", Timeout: config.Duration(5 * time.Second)})
		addBackup(c)
		c.Models[0].Targets = append([]config.Target{{Provider: "small", Model: "small-model"}}, c.Models[0].Targets...)
		c.Models[0].ContextFallback = "mock-claude"
	})
	status, _, got := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 400 || !strings.Contains(string(got), "content_filter") {
		t.Fatalf("status %d: %s; want the provider's content-filter 400", status, got)
	}
	if calls.Load() != 1 || backup.Stats().Total != 0 || s.mock.Stats().Total != 0 {
		t.Errorf("calls: filtering target %d, backup %d, mock %d; want 1, 0, 0", calls.Load(), backup.Stats().Total, s.mock.Stats().Total)
	}
}
