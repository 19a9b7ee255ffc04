package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// failoverUpstream is an OpenAI-style provider whose n-th user call (from
// 1) answers as script says; synthetic probes (X-Sluice-Probe) are
// counted apart and answered as call 0.
type failoverUpstream struct {
	srv           *httptest.Server
	calls, probes atomic.Int64
}

const plainAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"primary-model","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

func newFailoverUpstream(t *testing.T, script func(n int64, w http.ResponseWriter)) *failoverUpstream {
	t.Helper()
	u := &failoverUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int64(0)
		if r.Header.Get("X-Sluice-Probe") != "" {
			u.probes.Add(1)
		} else {
			n = u.calls.Add(1)
		}
		script(n, w)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func answerPlain(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(plainAnswer))
}

func refuseWith(w http.ResponseWriter, status int, hdr map[string]string) {
	for k, v := range hdr {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write([]byte(`{"error":{"message":"no","type":"server_error"}}`))
}

// scriptedStack: the model's first target is the scripted primary, its
// second a healthy mock backup; clock is the gateway's, skewed by skew.
func failoverStack(t *testing.T, primary *failoverUpstream, skew *atomic.Int64) (*stack, *mock.Server) {
	t.Helper()
	backup, addBackup := withBackup(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}})
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].BaseURL = primary.srv.URL + "/v1"
		addBackup(c)
	}, func(o *gateway.Options) { o.Now = clock })
	return s, backup
}

// Issue 21's single-request case at the gateway: a primary down hard
// (every call a 503) and a healthy backup, 15 single requests 4 s apart
// on the gateway's clock. Every client gets the backup's answer, and the
// primary sees no more user calls than the breaker's run of errors: a
// 503 is a capacity refusal, so it moves on at once, and the fifth in a
// row trips the breaker.
func TestLowTrafficFailover(t *testing.T) {
	primary := newFailoverUpstream(t, func(n int64, w http.ResponseWriter) { refuseWith(w, 503, nil) })
	var skew atomic.Int64
	s, backup := failoverStack(t, primary, &skew)
	for i := range 15 {
		status, h, body := s.do("/v1/chat/completions", chatBody, nil)
		if status != 200 {
			t.Fatalf("request %d: status %d: %s", i, status, body)
		}
		if p := h.Get("X-Sluice-Provider"); p != "backup" {
			t.Errorf("request %d answered by %q, want the backup", i, p)
		}
		skew.Add(int64(4 * time.Second))
	}
	if got := backup.Stats().Completed; got != 15 {
		t.Errorf("the backup completed %d calls, want 15", got)
	}
	if n := primary.calls.Load(); n > 5 {
		t.Errorf("the primary saw %d user calls, want at most the breaker's run of 5", n)
	}
	t.Logf("primary: %d user calls, %d synthetic probes", primary.calls.Load(), primary.probes.Load())
	if !strings.Contains(s.logText(), "consecutive_errors") {
		t.Errorf("no breaker trip on consecutive errors in the log:\n%s", s.logText())
	}
}

// One 500, then the primary answers: the retry stays on the primary, and
// the client gets the model it asked for, told so by the header and the
// log.
func TestSameTargetRetryKeepsTheModel(t *testing.T) {
	primary := newFailoverUpstream(t, func(n int64, w http.ResponseWriter) {
		if n == 1 {
			refuseWith(w, 500, nil)
			return
		}
		answerPlain(w)
	})
	var skew atomic.Int64
	s, backup := failoverStack(t, primary, &skew)
	status, h, body := s.do("/v1/chat/completions", chatBody, nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := h.Get("X-Sluice-Second-Call"); got != "retry_same" {
		t.Errorf("X-Sluice-Second-Call %q, want retry_same", got)
	}
	if p := h.Get("X-Sluice-Provider"); p != "mock-openai" {
		t.Errorf("answered by %q, want the primary", p)
	}
	if n := primary.calls.Load(); n != 2 || backup.Stats().Total != 0 {
		t.Errorf("primary saw %d calls, backup %d; want 2 and 0", n, backup.Stats().Total)
	}
	if !strings.Contains(s.logText(), "second_call=retry_same") {
		t.Errorf("the request log does not name the retry:\n%s", s.logText())
	}
}

// A short Retry-After is waited out on the primary; a long one goes to
// the backup at once.
func TestRetryAfterWaitOrMove(t *testing.T) {
	for _, c := range []struct {
		name, after, header, provider string
		primaryCalls                  int64
		minTook, maxTook              time.Duration
	}{
		{"short: waited out", "300", "retry_after", "mock-openai", 2, 300 * time.Millisecond, 2 * time.Second},
		{"long: the backup at once", "10000", "retry", "backup", 1, 0, 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			primary := newFailoverUpstream(t, func(n int64, w http.ResponseWriter) {
				if n == 1 {
					refuseWith(w, 429, map[string]string{"Retry-After-Ms": c.after})
					return
				}
				answerPlain(w)
			})
			var skew atomic.Int64
			s, _ := failoverStack(t, primary, &skew)
			start := time.Now()
			status, h, body := s.do("/v1/chat/completions", chatBody, nil)
			took := time.Since(start)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if got := h.Get("X-Sluice-Second-Call"); got != c.header {
				t.Errorf("X-Sluice-Second-Call %q, want %q", got, c.header)
			}
			if p := h.Get("X-Sluice-Provider"); p != c.provider {
				t.Errorf("answered by %q, want %q", p, c.provider)
			}
			if n := primary.calls.Load(); n != c.primaryCalls {
				t.Errorf("the primary saw %d calls, want %d", n, c.primaryCalls)
			}
			if took < c.minTook || took > c.maxTook {
				t.Errorf("answered after %v, want between %v and %v", took, c.minTook, c.maxTook)
			}
		})
	}
}
