package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// With --metrics, the report's extra calls are the growth over the run of
// the gateway's hedges fired, retries, rescues and probes; other series
// (hedges won, other metrics) do not count.
func TestExtraCallsFromTheGatewaysMetrics(t *testing.T) {
	gw := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	var scrapes atomic.Int32
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := float64(scrapes.Add(1) - 1) // 0 before the run, 1 after
		fmt.Fprintf(w, "# TYPE sluice_hedges_total counter\n"+
			"sluice_hedges_total{model=\"m\",result=\"fired\"} %g\n"+
			"sluice_hedges_total{model=\"m\",result=\"won\"} %g\n"+
			"# TYPE sluice_retries_total counter\nsluice_retries_total{model=\"m\",provider=\"p\"} %g\n"+
			"# TYPE sluice_rescues_total counter\nsluice_rescues_total{model=\"m\",from=\"p\",to=\"q\"} %g\n"+
			"# TYPE sluice_breaker_probes_total counter\nsluice_breaker_probes_total{provider=\"p\",result=\"ok\"} %g\n"+
			"# TYPE sluice_requests_total counter\nsluice_requests_total{outcome=\"ok\"} %g\n",
			10+2*n, 10+100*n, 5+3*n, 1+4*n, 7+5*n, 1000*n)
	}))
	defer metrics.Close()
	row := mustRun(t, loadScenario(t, "basic.yaml", one), Options{Target: gw.url, Metrics: metrics.URL})
	if row.Extra != 2+3+4+5 {
		t.Errorf("extra calls %d, want 14 (2 hedges fired, 3 retries, 4 rescues, 5 probes)", row.Extra)
	}
	if n := scrapes.Load(); n != 2 {
		t.Errorf("%d scrapes, want one before and one after", n)
	}
}

func TestMetricsURLMustAnswer(t *testing.T) {
	gw := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	_, err := Run(context.Background(), loadScenario(t, "basic.yaml", one), Options{Target: gw.url, Metrics: gw.url + "/nothing-here"})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a ConfigError naming --metrics", err)
	}
}

// A gateway that restarted during the run reset its counters: the extra
// calls are unknown, and a note says why, even without progress output.
func TestExtraCallsAcrossARestartAreUnknown(t *testing.T) {
	gw := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	var scrapes atomic.Int32
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := scrapes.Add(1)
		fmt.Fprintf(w, "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %d\n"+
			"# TYPE sluice_retries_total counter\nsluice_retries_total{model=\"m\",provider=\"p\"} %d\n", 1000+n, 50/n)
	}))
	defer metrics.Close()
	var notes strings.Builder
	row := mustRun(t, loadScenario(t, "basic.yaml", one), Options{Target: gw.url, Metrics: metrics.URL, Notes: &notes})
	if row.Extra != 0 || !strings.Contains(notes.String(), "restarted") {
		t.Errorf("extra %d, notes %q; want 0 and a note about the restart", row.Extra, notes.String())
	}
}
