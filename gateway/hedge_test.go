package gateway_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/config"
	"github.com/sluice-gw/sluice/mock"
)

// hedgeStack: a slow primary (2 s to first byte) and a fast backup, the
// model hedging after 200 ms.
func hedgeStack(t *testing.T, budget, burst float64) (*stack, *mock.Server) {
	t.Helper()
	backup, addBackup := withBackup(t, mock.Config{TTFT: 10 * time.Millisecond, TPOT: time.Millisecond, OutputTokens: mock.TokenRange{Min: 3}})
	s := newStack(t, mock.Config{TTFT: 2 * time.Second, OutputTokens: mock.TokenRange{Min: 3}}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Hedging = config.Budget{Budget: budget, Burst: burst}
		addBackup(c)
		c.Models[0].HedgeAfter = config.HedgeDelay{Fixed: config.Duration(200 * time.Millisecond)}
	})
	return s, backup
}

func TestHedgeWinsAndCancelsTheLoser(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "buffered", true: "streaming"}[stream]
		t.Run(name, func(t *testing.T) {
			s, backup := hedgeStack(t, 1, 10)
			body := chatBody
			if stream {
				body = `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`
			}
			start := time.Now()
			status, _, got := s.do("/v1/chat/completions", body, nil)
			took := time.Since(start)
			if status != 200 {
				t.Fatalf("status %d: %s", status, got)
			}
			if took < 200*time.Millisecond || took > time.Second {
				t.Errorf("answered after %v; want the hedge's answer at about 200 ms", took)
			}
			if backup.Stats().Completed != 1 {
				t.Errorf("the backup completed %d calls, want the hedge", backup.Stats().Completed)
			}
			waitFor(t, "the primary's call to be cancelled", func() bool { return s.mock.Stats().CancelledByClient == 1 })
			if stream && !strings.Contains(string(got), "[DONE]") {
				t.Errorf("stream incomplete:\n%s", got)
			}
		})
	}
}

// The budget caps hedges: with a burst of one and a 1% budget, one of
// five concurrent slow requests is hedged; the rest wait out the slow
// primary.
func TestHedgeBudget(t *testing.T) {
	s, backup := hedgeStack(t, 0.01, 1)
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := s.post(context.Background(), "/v1/chat/completions", chatBody, nil)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if n := backup.Stats().Total; n != 1 {
		t.Errorf("the backup saw %d hedges; the budget allows one", n)
	}
}

// A primary that fails before answering (a reset, a 500, a 529) is
// retried once on the backup, and the client gets the backup's answer.
func TestRetryOnAnotherTarget(t *testing.T) {
	for _, f := range []mock.Failure{
		{Kind: mock.FailReset},
		{Kind: mock.FailStatus, Status: 500},
		{Kind: mock.FailStatus, Status: 529},
	} {
		t.Run(f.Kind+fmt.Sprint(f.Status), func(t *testing.T) {
			backup, addBackup := withBackup(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}})
			s := newStack(t, mock.Config{Failures: []mock.Failure{f}}, addBackup)
			status, _, body := s.do("/v1/chat/completions", chatBody, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if backup.Stats().Completed != 1 || s.mock.Stats().ErrorsInjected != 1 {
				t.Errorf("backup completed %d, primary failed %d: want one retry", backup.Stats().Completed, s.mock.Stats().ErrorsInjected)
			}
		})
	}
}

// With no other target, a call that fails safely is retried once on the
// same provider, after the provider's own Retry-After.
func TestRetrySameProviderHonoursRetryAfter(t *testing.T) {
	s := newStack(t, mock.Config{Failures: []mock.Failure{
		// Calls in the provider's first 300 ms are refused with a 529
		// asking for 500 ms; the retry comes after the window.
		{Kind: mock.FailStatus, Status: 529, RetryAfter: 500 * time.Millisecond, End: 300 * time.Millisecond},
	}}, nil)
	start := time.Now()
	status, _, body := s.do("/v1/chat/completions", chatBody, nil)
	took := time.Since(start)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if took < 500*time.Millisecond || took > 2*time.Second {
		t.Errorf("answered after %v; want the retry after the 500ms Retry-After", took)
	}
	if st := s.mock.Stats(); st.Total != 2 || st.ErrorsInjected != 1 {
		t.Errorf("provider saw %d calls, %d failed; want one failure and one retry", st.Total, st.ErrorsInjected)
	}
}
