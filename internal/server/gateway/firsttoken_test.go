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

// silentUpstream is a provider that answers nothing: with head false it
// never sends its headers; with head true it sends them and a stream's
// head (a role-only chunk, or message_start) and then no token. Either
// way it holds the call until the gateway cancels it, and counts calls
// and cancellations.
type silentUpstream struct {
	calls, cancelled atomic.Int32
	url              string
}

func newSilentUpstream(t *testing.T, head bool) *silentUpstream {
	t.Helper()
	u := &silentUpstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		// Read the request as a provider does: only then does the server
		// watch the connection, and see the gateway close it.
		io.Copy(io.Discard, r.Body)
		if head {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			if strings.Contains(r.URL.Path, "/messages") {
				w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n"))
			} else {
				w.Write([]byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\n"))
			}
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
			u.cancelled.Add(1)
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

// firstTokenStack: model mock-gpt (OpenAI) or mock-claude (Anthropic)
// has the silent upstream as its primary and the healthy mock as its
// fallback, with the first-token ceiling at 300 ms and nothing else
// changed: no hedge_after, the default budgets, a single request.
func firstTokenStack(t *testing.T, silent *silentUpstream, kind string) *stack {
	return newStack(t, mock.Config{TTFT: 5 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 3}}, func(c *config.Config) {
		c.FirstToken.Ceiling = config.Duration(300 * time.Millisecond)
		c.FirstToken.Floor = config.Duration(100 * time.Millisecond)
		c.Providers = append(c.Providers, config.Provider{Name: "silent", Kind: kind, BaseURL: silent.url + "/v1", Timeout: config.Duration(20 * time.Second)})
		for i := range c.Models {
			m := &c.Models[i]
			if (kind == "openai" && m.Name == "mock-gpt") || (kind == "anthropic" && m.Name == "mock-claude") {
				m.Targets = append([]config.Target{{Provider: "silent", Model: "silent-model"}}, m.Targets...)
			}
		}
	})
}

func TestFirstTokenDeadlineRescuesASilentPrimary(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		for _, head := range []bool{false, true} {
			for _, stream := range []bool{false, true} {
				if head && !stream {
					continue // a stream's head is a stream's
				}
				name := kind + map[bool]string{false: "/no-headers", true: "/headers-no-token"}[head] + map[bool]string{false: "/whole", true: "/stream"}[stream]
				t.Run(name, func(t *testing.T) {
					silent := newSilentUpstream(t, head)
					s := firstTokenStack(t, silent, kind)
					path, body := "/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
					if kind == "anthropic" {
						path, body = "/v1/messages", messagesBody
					}
					if stream {
						body = strings.Replace(body, `"messages"`, `"stream":true,"messages"`, 1)
					}
					start := time.Now()
					status, hdr, got := s.do(path, body, nil)
					took := time.Since(start)
					if status != 200 {
						t.Fatalf("status %d: %s", status, got)
					}
					if took < 300*time.Millisecond || took > 3*time.Second {
						t.Errorf("answered after %v; want the fallback's answer soon after the 300 ms first-token deadline", took)
					}
					if p := hdr.Get("X-Sluice-Provider"); p == "silent" {
						t.Errorf("answered by %q, want the fallback", p)
					}
					if sc := hdr.Get("X-Sluice-Second-Call"); sc != "first_token" {
						t.Errorf("X-Sluice-Second-Call %q, want first_token", sc)
					}
					if silent.calls.Load() != 1 {
						t.Errorf("the silent primary saw %d calls, want 1", silent.calls.Load())
					}
					waitFor(t, "the silent call to be cancelled upstream", func() bool { return silent.cancelled.Load() == 1 })
					if stream && kind == "openai" && !strings.Contains(string(got), "[DONE]") {
						t.Errorf("stream incomplete:\n%s", got)
					}
				})
			}
		}
	}
}

// With first_token_ceiling: 0s on the model, the deadline is off for it:
// the request waits for its client's deadline (here 600 ms) instead.
func TestFirstTokenDeadlineOffPerModel(t *testing.T) {
	silent := newSilentUpstream(t, false)
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		c.FirstToken.Ceiling = config.Duration(100 * time.Millisecond)
		c.FirstToken.Floor = config.Duration(50 * time.Millisecond)
		c.Providers = append(c.Providers, config.Provider{Name: "silent", Kind: "openai", BaseURL: silent.url + "/v1", Timeout: config.Duration(600 * time.Millisecond)})
		c.Models[0].Targets = append([]config.Target{{Provider: "silent", Model: "silent-model"}}, c.Models[0].Targets...)
		c.Models[0].FirstTokenOff = true
	})
	status, _, got := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, nil)
	if status == 200 {
		t.Fatalf("answered 200 with the deadline off: %s", got)
	}
	if n := s.mock.Stats().Total; n != 0 {
		t.Errorf("the fallback saw %d calls, want none", n)
	}
}
