package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// Every answer says which provider and upstream model served it, after
// how many upstream calls and how long a wait, and whether a hedge,
// rescue or retry made it; config hides any of them.
func TestResponseHeadersSayWhatHappened(t *testing.T) {
	want := func(t *testing.T, h http.Header, pairs ...string) {
		t.Helper()
		for i := 0; i < len(pairs); i += 2 {
			if got := h.Get(pairs[i]); got != pairs[i+1] {
				t.Errorf("%s: %q, want %q", pairs[i], got, pairs[i+1])
			}
		}
	}
	t.Run("first call", func(t *testing.T) {
		s := newStack(t, mock.Config{}, nil)
		status, h, body := s.do("/v1/chat/completions", chatBody, nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		want(t, h, "X-Sluice-Provider", "mock-openai", "X-Sluice-Model", "mock-gpt-4o", "X-Sluice-Attempts", "1",
			"X-Sluice-Queue-Ms", "0", "X-Sluice-Second-Call", "")
	})
	t.Run("hedge", func(t *testing.T) {
		s, _ := hedgeStack(t, 1, 10)
		status, h, body := s.do("/v1/chat/completions", chatBody, nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		want(t, h, "X-Sluice-Provider", "backup", "X-Sluice-Model", "backup-model", "X-Sluice-Attempts", "2", "X-Sluice-Second-Call", "hedge")
	})
	t.Run("retry", func(t *testing.T) {
		_, addBackup := withBackup(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}})
		s := newStack(t, mock.Config{Failures: []mock.Failure{{Kind: mock.FailStatus, Status: 529}}}, addBackup)
		status, h, body := s.do("/v1/chat/completions", chatBody, nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		want(t, h, "X-Sluice-Provider", "backup", "X-Sluice-Attempts", "2", "X-Sluice-Second-Call", "retry")
	})
	t.Run("retry on the same target, then the next", func(t *testing.T) {
		// A lone 500 is tried once more on its target; that failing too,
		// the backup answers: three calls.
		_, addBackup := withBackup(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}})
		s := newStack(t, mock.Config{Failures: []mock.Failure{{Kind: mock.FailStatus, Status: 500}}}, addBackup)
		status, h, body := s.do("/v1/chat/completions", chatBody, nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		want(t, h, "X-Sluice-Provider", "backup", "X-Sluice-Attempts", "3", "X-Sluice-Second-Call", "retry")
	})
	t.Run("an upstream error", func(t *testing.T) {
		s := newStack(t, mock.Config{Failures: []mock.Failure{{Kind: mock.FailStatus, Status: 400}}}, nil)
		status, h, _ := s.do("/v1/chat/completions", chatBody, nil)
		if status != 400 {
			t.Fatalf("status %d, want the provider's 400", status)
		}
		want(t, h, "X-Sluice-Provider", "mock-openai", "X-Sluice-Attempts", "1")
	})
	t.Run("hidden", func(t *testing.T) {
		s := newStack(t, mock.Config{}, func(c *config.Config) {
			c.ResponseHeaders.Hide = []string{"provider", "model"}
		})
		_, h, _ := s.do("/v1/chat/completions", chatBody, nil)
		want(t, h, "X-Sluice-Provider", "", "X-Sluice-Model", "", "X-Sluice-Attempts", "1")
		s = newStack(t, mock.Config{}, func(c *config.Config) { c.ResponseHeaders.Hide = []string{"all"} })
		_, h, _ = s.do("/v1/chat/completions", chatBody, nil)
		for k := range h {
			if len(k) > 9 && k[:9] == "X-Sluice-" {
				t.Errorf("hide: [all], yet the answer carries %s", k)
			}
		}
	})
}

// A provider cannot write into Sluice's own headers: its X-Sluice-*
// headers are not passed on, so it cannot claim an answer was degraded
// or served by someone else.
func TestProviderCannotWriteSluiceHeaders(t *testing.T) {
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Sluice-Provider", "someone-else")
		w.Header().Set("X-Sluice-Degraded", "max_tokens=1")
		w.Header().Set("X-Request-Id", "req-1")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(evil.Close)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].BaseURL = evil.URL + "/v1"
		c.Providers[0].Timeout = config.Duration(5 * time.Second)
	})
	status, h, body := s.do("/v1/chat/completions", chatBody, nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := h.Values("X-Sluice-Provider"); len(got) != 1 || got[0] != "mock-openai" {
		t.Errorf("X-Sluice-Provider %q, want only the gateway's mock-openai", got)
	}
	if h.Get("X-Sluice-Degraded") != "" || h.Get("X-Request-Id") != "req-1" {
		t.Errorf("X-Sluice-Degraded %q (want none), X-Request-Id %q (want the provider's)", h.Get("X-Sluice-Degraded"), h.Get("X-Request-Id"))
	}
}

// An answer is priced as the target that gave it: a request retried on
// the backup is charged at the backup model's price, not the primary's.
func TestRetriedAnswerPricedAsItsTarget(t *testing.T) {
	_, addBackup := withBackup(t, mock.Config{OutputTokens: mock.TokenRange{Min: 5}})
	s := newStack(t, mock.Config{Failures: []mock.Failure{{Kind: mock.FailStatus, Status: 500}}}, func(c *config.Config) {
		addBackup(c)
		c.Prices = map[string]config.Price{"mock-gpt-4o": {Input: 1000, Output: 1000}, "backup-model": {Input: 1, Output: 1}}
	})
	if status, h, body := s.do("/v1/chat/completions", chatBody, nil); status != 200 || h.Get("X-Sluice-Model") != "backup-model" {
		t.Fatalf("status %d, model %q: %s", status, h.Get("X-Sluice-Model"), body)
	}
	m := httpGetAdmin(t, s, "/metrics")
	if !strings.Contains(m, `model="backup-model"`) || strings.Contains(m, `sluice_cost_dollars_total{key="-",model="mock-gpt-4o"}`) {
		t.Errorf("cost not charged to the answering model:\n%s", grepLines(m, "sluice_cost"))
	}
}
