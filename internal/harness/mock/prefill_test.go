package mock

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A prompt's prefill adds to TTFT, at prefill_per_1k_tokens for each
// 1,000 tokens counted at CharsPerToken bytes each, and holds the call's
// slot: the call queued behind it waits for it.
func TestPrefillHoldsTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{TTFT: 100 * time.Millisecond, OutputTokens: TokenRange{Min: 1}, MaxRunning: 1, PrefillPer1K: 40 * time.Millisecond})
		prompt := strings.Repeat("x", CharsPerToken*20000) // 20,000 tokens: 800ms
		big := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":%q}]}`, prompt)
		var (
			wg       sync.WaitGroup
			bigTook  time.Duration
			tinyTook time.Duration
		)
		wg.Go(func() {
			rec, took := serve(s, "/v1/chat/completions", big)
			if rec.Code != http.StatusOK {
				t.Errorf("big prompt: %d", rec.Code)
			}
			bigTook = took
		})
		synctest.Wait()
		wg.Go(func() { _, tinyTook = serve(s, "/v1/chat/completions", tinyChat) })
		wg.Wait()
		if bigTook != 900*time.Millisecond {
			t.Errorf("20,000-token prompt answered after %v, want 100ms + 800ms of prefill", bigTook)
		}
		// tinyChat's few tokens cost well under a millisecond.
		if tinyTook < time.Second || tinyTook > time.Second+time.Millisecond {
			t.Errorf("the call queued behind it answered after %v, want about 900ms + 100ms", tinyTook)
		}
	})
	if got := (Config{PrefillPer1K: 40 * time.Millisecond}).Prefill(20000); got != 800*time.Millisecond {
		t.Errorf("Prefill(20000) = %v", got)
	}
	if EstimateTokens(CharsPerToken*123) != 123 || EstimateTokens(1) != 1 {
		t.Error("EstimateTokens does not invert CharsPerToken")
	}
	if err := (Config{PrefillPer1K: -time.Millisecond}).Validate(); err == nil {
		t.Error("a negative prefill time validated")
	}
}
