package gateway_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
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

// A primary that fails before answering (a reset, a 500, a 529): the
// client gets the backup's answer. A lone reset or 500 is tried once
// more on the primary first (the client keeps its model, were the
// fault brief); a 529 says the primary is at capacity and moves on at
// once.
func TestRetryOnAnotherTarget(t *testing.T) {
	for _, c := range []struct {
		f       mock.Failure
		primary int64
	}{
		{mock.Failure{Kind: mock.FailReset}, 2},
		{mock.Failure{Kind: mock.FailStatus, Status: 500}, 2},
		{mock.Failure{Kind: mock.FailStatus, Status: 529}, 1},
	} {
		t.Run(c.f.Kind+fmt.Sprint(c.f.Status), func(t *testing.T) {
			backup, addBackup := withBackup(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}})
			s := newStack(t, mock.Config{Failures: []mock.Failure{c.f}}, addBackup)
			status, h, body := s.do("/v1/chat/completions", chatBody, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if got := h.Get("X-Sluice-Second-Call"); got != "retry" {
				t.Errorf("X-Sluice-Second-Call %q, want retry", got)
			}
			// The mock counts an injected failure after it has delivered
			// it (a reset closes the socket first), so wait for the count.
			waitFor(t, "the primary's failures and the backup's answer", func() bool {
				return backup.Stats().Completed == 1 && s.mock.Stats().ErrorsInjected == c.primary
			})
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

// A provider that sends its headers and stream head at once and its first
// token 2 s later has not answered: the hedge to a fast backup still
// wins the race, in both APIs. Committing at the first byte would hand
// the client the slow stream.
func TestHedgeRacesToTheFirstTokenNotTheFirstByte(t *testing.T) {
	for _, c := range []struct{ model, kind, path, body string }{
		{"mock-gpt", "openai", "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"mock-claude", "anthropic", "/v1/messages", `{"model":"mock-claude","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(c.kind, func(t *testing.T) {
			backup := mock.New(mock.Config{TTFT: 10 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 3}})
			url, stop, err := backup.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			s := newStack(t, mock.Config{TTFT: 2 * time.Second, EarlyHead: true, OutputTokens: mock.TokenRange{Min: 3}}, func(cfg *config.Config) {
				cfg.Hedging = config.Budget{Budget: 1, Burst: 10}
				cfg.Providers = append(cfg.Providers, config.Provider{Name: "backup", Kind: c.kind, BaseURL: url + "/v1", Timeout: config.Duration(10 * time.Second)})
				for i := range cfg.Models {
					if cfg.Models[i].Name == c.model {
						cfg.Models[i].HedgeAfter = config.HedgeDelay{Fixed: config.Duration(200 * time.Millisecond)}
						cfg.Models[i].Targets = append(cfg.Models[i].Targets, config.Target{Provider: "backup", Model: "backup-model"})
					}
				}
			})
			start := time.Now()
			status, _, got := s.do(c.path, c.body, map[string]string{"anthropic-version": "2023-06-01"})
			if took := time.Since(start); status != 200 || took > time.Second {
				t.Fatalf("status %d after %v; want the backup's stream at about 200 ms:\n%s", status, took, got)
			}
			if backup.Stats().Completed != 1 {
				t.Errorf("the backup completed %d calls, want the hedge", backup.Stats().Completed)
			}
			waitFor(t, "the primary's call to be cancelled", func() bool { return s.mock.Stats().CancelledByClient == 1 })
		})
	}
}
