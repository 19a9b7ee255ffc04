package mock

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-gw/sluice/internal/core/pool"
	"github.com/sluice-gw/sluice/internal/server/scrape"
)

// /metrics shows the capacity model as vLLM names it, so a gateway's
// replica pool reads a mock as it reads a vLLM server.
func TestMetricsShowTheCapacityModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{TTFT: time.Second, OutputTokens: TokenRange{Min: 1}, MaxRunning: 2})
		read := func() pool.Load {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("/metrics: %d", rec.Code)
			}
			l, err := scrape.ParseMetrics(rec.Body)
			if err != nil {
				t.Fatalf("/metrics does not parse as a vLLM page: %v\n%s", err, rec.Body)
			}
			return l
		}
		if l := read(); l != (pool.Load{}) {
			t.Errorf("idle: %+v, want all zero", l)
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { serve(s, "/v1/chat/completions", tinyChat) })
		}
		synctest.Wait()
		if l := read(); l != (pool.Load{Running: 2, Waiting: 1, KVCache: 1}) {
			t.Errorf("three calls on a batch of two: %+v, want 2 running, 1 waiting, cache full", l)
		}
		wg.Wait()
		if l := read(); l != (pool.Load{}) {
			t.Errorf("after: %+v, want all zero", l)
		}
	})
}
