package gateway_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// A provider's Retry-After is never waited out with slots held, and its
// length is bounded before the client hears it: with nowhere else to go,
// a 429 asking for 30 s is answered at once, and requests after it are
// refused at once while the provider's pause lasts.
func TestProviderRetryAfterIsNotWaitedOut(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].Timeout = config.Duration(60 * time.Second)
	})
	start := time.Now()
	status, hdr, body := s.do("/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "429", "X-Mock-Retry-After": "30s"})
	if took := time.Since(start); status != 429 || took > time.Second || hdr.Get("Retry-After") != "30" {
		t.Fatalf("status %d after %v, Retry-After %q: %s; want the 429 at once, with its Retry-After", status, took, hdr.Get("Retry-After"), body)
	}
	if st := s.mock.Stats(); st.Total != 1 {
		t.Fatalf("the provider saw %d calls; a 30 s Retry-After must not be retried", st.Total)
	}
	start = time.Now()
	status, hdr, body = s.do("/v1/chat/completions", chatBody, nil)
	if took := time.Since(start); status != 503 || took > 100*time.Millisecond || s.mock.Stats().Total != 1 {
		t.Fatalf("during the pause: status %d after %v, provider calls %d: %s; want a fast 503 and no call", status, took, s.mock.Stats().Total, body)
	}
	if ra, _ := strconv.Atoi(hdr.Get("Retry-After")); ra < 28 || ra > 30 {
		t.Errorf("Retry-After %q during the pause; want the rest of the provider's 30 s", hdr.Get("Retry-After"))
	}
}

// A Retry-After past the bound is cut to it: a provider answering
// Retry-After: 99999 takes itself out for open_for_max, not a day.
func TestProviderRetryAfterIsBounded(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].Breaker = &config.Breaker{OpenFor: config.Duration(time.Second), OpenForMax: config.Duration(3 * time.Second)}
	})
	status, hdr, _ := s.do("/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "429", "X-Mock-Retry-After": "99999s"})
	if status != 429 || hdr.Get("Retry-After") != "3" {
		t.Fatalf("status %d, Retry-After %q; want the 429 with Retry-After bounded to open_for_max (3 s)", status, hdr.Get("Retry-After"))
	}
}

// With a backup, the refused request fails over at once, and so do the
// requests after it, while the primary's pause lasts.
func TestProviderRetryAfterFailsOver(t *testing.T) {
	backup, addBackup := withBackup(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}})
	s := newStack(t, mock.Config{}, addBackup)
	start := time.Now()
	status, _, body := s.do("/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "429", "X-Mock-Retry-After": "30s"})
	if took := time.Since(start); status != 200 || took > time.Second {
		t.Fatalf("status %d after %v: %s; want the backup's answer at once", status, took, body)
	}
	for range 3 {
		if status, _, body := s.do("/v1/chat/completions", chatBody, nil); status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
	}
	if p, b := s.mock.Stats().Total, backup.Stats().Total; p != 1 || b != 4 {
		t.Fatalf("primary saw %d calls, backup %d; want 1 and 4 (the primary paused)", p, b)
	}
	if !strings.Contains(s.logText(), "provider=backup") {
		t.Errorf("log does not show the backup serving:\n%s", s.logText())
	}
}

// A provider's Retry-After reaches the client only as the bounded value:
// one it cannot parse, a negative one, a date, or one past the bound is
// not passed on as sent.
func TestProviderRetryAfterHeaderIsNeverRelayedRaw(t *testing.T) {
	for _, v := range []string{"99999999999", "-5", "Wed, 21 Oct 2099 07:28:00 GMT", "soon"} {
		t.Run(v, func(t *testing.T) {
			s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) {
				o.Transport = headerTransport{status: 429, header: http.Header{"Retry-After": {v}, "Retry-After-Ms": {v}}}
			})
			status, hdr, _ := s.do("/v1/chat/completions", chatBody, nil)
			ra, _ := strconv.Atoi(hdr.Get("Retry-After"))
			if status != 429 || hdr.Get("Retry-After-Ms") == v || ra > 120 || (hdr.Get("Retry-After") != "" && ra <= 0) {
				t.Fatalf("status %d, Retry-After %q, Retry-After-Ms %q", status, hdr.Get("Retry-After"), hdr.Get("Retry-After-Ms"))
			}
		})
	}
}

// headerTransport answers every call with one status, headers and a small
// JSON error.
type headerTransport struct {
	status int
	header http.Header
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp := jsonResponse(r, h.status, `{"error":{"message":"x","type":"rate_limit_error"}}`)
	for k, v := range h.header {
		resp.Header[k] = v
	}
	return resp, nil
}
