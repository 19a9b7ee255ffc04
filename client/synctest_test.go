package client

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRetryAfterOnTheRealClock runs the Transport on its real clock and
// timers inside a synctest bubble: the server asks for 3 s, then 1500 ms
// in retry-after-ms; each retry must go out exactly that late, not a
// nanosecond sooner, whatever the jitter would have drawn.
func TestRetryAfterOnTheRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			sent  []time.Time
			start = time.Now()
		)
		hints := []http.Header{
			{"Retry-After": {"3"}},
			{"Retry-After-Ms": {"1500"}, "Retry-After": {"9"}},
			nil,
		}
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			n := len(sent)
			sent = append(sent, time.Now())
			mu.Unlock()
			if n < 2 {
				return fakeResp(r, 503, hints[n]), nil
			}
			return fakeResp(r, 200, nil), nil
		})
		tr := New(Options{Transport: base, RetryBudget: -1, Throttle: ThrottleOptions{Disabled: true}})
		req, _ := http.NewRequest(http.MethodPost, "http://sluice.test/v1/chat/completions", strings.NewReader(`{}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(sent) != 3 {
			t.Fatalf("status %d after %d attempts, want 200 after 3", resp.StatusCode, len(sent))
		}
		want := []time.Duration{0, 3 * time.Second, 4500 * time.Millisecond}
		for i, at := range sent {
			if got := at.Sub(start); got != want[i] {
				t.Errorf("attempt %d went out at %s, want %s", i+1, got, want[i])
			}
		}
	})
}

// TestShouldRetryFalse: a retryable status that says x-should-retry:
// false is returned at once, with no wait and no retry.
func TestShouldRetryFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			n++
			return fakeResp(r, 503, http.Header{"X-Should-Retry": {"false"}, "Retry-After": {"1"}}), nil
		})
		start := time.Now()
		resp, err := New(Options{Transport: base}).RoundTrip(get(t, "http://sluice.test/v1/chat/completions"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n != 1 || resp.StatusCode != 503 || time.Since(start) != 0 {
			t.Fatalf("attempts = %d, status %d, took %s; want 1 attempt, 503, no wait", n, resp.StatusCode, time.Since(start))
		}
	})
}

// A 409 with Retry-After (the key's request still running on another
// Sluice replica) is retried after that wait, with the same key; a 409
// without one is returned as it is.
func TestInProgressConflictRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var keys []string
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			keys = append(keys, r.Header.Get(HeaderIdempotencyKey))
			if len(keys) == 1 {
				return fakeResp(r, http.StatusConflict, http.Header{"Retry-After": {"1"}}), nil
			}
			return fakeResp(r, 200, nil), nil
		})
		start := time.Now()
		resp, err := New(Options{Transport: base}).RoundTrip(get(t, "http://sluice.test/v1/chat/completions"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || len(keys) != 2 || keys[0] != keys[1] || time.Since(start) != time.Second {
			t.Fatalf("status %d after %d attempts (keys %q) in %s; want 200 after 2, one key, 1s", resp.StatusCode, len(keys), keys, time.Since(start))
		}
	})
}
