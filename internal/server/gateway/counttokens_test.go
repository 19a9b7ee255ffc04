package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// Counts take no slot and no budget, so the calls they make to a
// provider are capped: a client asking for counts in a loop holds at
// most four of the provider's calls at once, and the rest are counted by
// the tokenizer, at once, instead of spending the gateway's account.
func TestCountTokensCappedPerProvider(t *testing.T) {
	release := make(chan struct{})
	var calls, peak, now atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		calls.Add(1)
		n := now.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		defer now.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, `{"input_tokens":7}`)
	}))
	t.Cleanup(slow.Close)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers = append(c.Providers, config.Provider{Name: "counter", Kind: config.KindAnthropic, BaseURL: slow.URL + "/v1",
			Timeout: config.Duration(config.DefaultProviderTimeout)})
		c.Models = append(c.Models, config.Model{Name: "claude-count", Targets: []config.Target{{Provider: "counter", Model: "claude-x"}}})
	})
	body := `{"model":"claude-count","messages":[{"role":"user","content":"hello"}]}`
	hdr := map[string]string{"anthropic-version": "2023-06-01"}
	var wg sync.WaitGroup
	results := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, h, _ := s.do("/v1/messages/count_tokens", body, hdr)
			results <- h.Get("X-Sluice-Token-Count")
		}()
	}
	waitFor(t, "four counts held by the provider", func() bool { return now.Load() == 4 })
	// The provider holds four: the next ten are the tokenizer's, at once.
	for i := range 10 {
		start := time.Now()
		status, h, b := s.do("/v1/messages/count_tokens", body, hdr)
		if status != 200 || h.Get("X-Sluice-Token-Count") == "provider" || time.Since(start) > 2*time.Second {
			t.Fatalf("count %d past the cap: %d %q %s after %v; want the tokenizer's, at once", i, status, h.Get("X-Sluice-Token-Count"), b, time.Since(start))
		}
	}
	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		if r != "provider" {
			t.Errorf("a count within the cap: %q, want the provider's", r)
		}
	}
	if calls.Load() != 4 || peak.Load() != 4 {
		t.Errorf("the provider got %d count calls, %d at once; want 4, 4", calls.Load(), peak.Load())
	}
}
