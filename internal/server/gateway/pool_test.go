package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/pool"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// A pooled provider sends each call to one of its replicas' base URLs;
// a replica whose scraped metrics show a long queue is drained, so every
// call goes to the other until its queue is gone.
func TestPoolRoutesAroundAQueuedReplica(t *testing.T) {
	other := mock.New(mock.Config{OutputTokens: mock.TokenRange{Min: 1}})
	otherURL, stop, err := other.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	// The other replica's metrics say it is drowning in its queue.
	queued := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "vllm:num_requests_running 4\nvllm:num_requests_waiting 40\nvllm:kv_cache_usage_perc 1\n")
	}))
	t.Cleanup(queued.Close)
	var provider string
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		p := &c.Providers[0]
		provider = p.Name
		p.Replicas = []config.Replica{
			{Name: "busy", BaseURL: otherURL + "/v1", MetricsURL: queued.URL + "/metrics"},
			{Name: "idle", BaseURL: strings.TrimSuffix(p.BaseURL, "/"), MetricsURL: strings.TrimSuffix(strings.TrimSuffix(p.BaseURL, "/"), "/v1") + "/metrics"},
		}
		p.BaseURL = ""
		p.MaxInFlight = 4
		p.Pool = config.Pool{Balance: config.PoolLeastLoaded, ScrapeInterval: config.Duration(50 * time.Millisecond), StaleAfter: config.Duration(5 * time.Second)}
	})
	waitFor(t, "the busy replica to be drained", func() bool {
		st := s.gw.Runner().PoolStats(0)
		return len(st) == 2 && st[0].Drain == pool.Queued && st[1].Fresh
	})
	for range 6 {
		if status, _, body := s.do("/v1/chat/completions", chatBody, nil); status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
	}
	if n := other.Stats().Total; n != 0 {
		t.Errorf("the drained replica got %d calls", n)
	}
	if n := s.mock.Stats().Total; n != 6 {
		t.Errorf("the idle replica got %d calls, want 6", n)
	}
	m := s.gw.Metrics()
	if n := testutil.ToFloat64(m.ReplicaCalls.WithLabelValues(provider, "idle")); n != 6 {
		t.Errorf("sluice_replica_calls_total{replica=idle} = %v, want 6", n)
	}
	// The gauge is set by the scrape loop just after the engine heard
	// the page that drained the replica: waited for, not raced.
	waitFor(t, "sluice_replica_drained{replica=busy,reason=queued} to read 1", func() bool {
		return testutil.ToFloat64(m.ReplicaDrained.WithLabelValues(provider, "busy", "queued")) == 1
	})
}
