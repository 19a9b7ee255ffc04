package loadgen

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

const ms = time.Millisecond

// rampSteps: 20/s for a second, then a one-second ramp to 60/s, held. Over
// 3 s that is 20 + 40 + 60 = 120 requests.
var rampSteps = []scenario.RateStep{{At: 0, RPS: 20}, {At: time.Second, RPS: 60, Ramp: time.Second}}

// The schedule's and the arrivals' arithmetic is package workload's, and
// tested there; these tests check that a run issues what it computes.

func TestRunIssuesTheIntegral(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	f := loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		s.Duration = 3 * time.Second
		s.Clients.Rate = rampSteps
	})
	start := time.Now()
	row := mustRun(t, f, Options{Target: g.url, TimeScale: 0.2})
	took := time.Since(start)
	if row.Unique != 120 || len(g.seen()) != 120 || row.Counts[0] != 120 || row.Attempts != 120 {
		t.Errorf("unique %d, hits %d, ok %d, attempts %d; want 120 each", row.Unique, len(g.seen()), row.Counts[0], row.Attempts)
	}
	if took < 550*ms || took > 3*time.Second {
		t.Errorf("a 3s scenario at time scale 0.2 took %v, want about 600ms", took)
	}
	if row.Name != "basic" || row.Duration < 590*ms || row.Duration > 700*ms || row.Peak < 1 {
		t.Errorf("row name %q, duration %v, peak %d", row.Name, row.Duration, row.Peak)
	}
	if n := len(row.Latency[1]); n != 120 || len(row.TTFT[1]) != 120 {
		t.Errorf("%d latency samples, want 120", n)
	}
	// The last arrival lands on the end of the (scaled) duration.
	hits := g.seen()
	if last := hits[len(hits)-1].at.Sub(start); last < 550*ms {
		t.Errorf("last arrival %v into the run, want about 600ms", last)
	}
}

func TestRunPoissonCountIsSeeded(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	f := loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		s.Name = ""
		s.Duration = 500 * ms
		s.Clients.Arrivals = "poisson"
		s.Clients.Rate = []scenario.RateStep{{RPS: 100}, {At: 200 * ms, RPS: 300, Ramp: 200 * ms}}
	})
	p, err := newPlan(f, Options{Target: g.url})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for arr := p.arrivals(p.streams[0]); ; want++ {
		if _, ok := arr.Next(); !ok {
			break
		}
	}
	if want < 50 {
		t.Fatalf("the scenario schedules only %d arrivals; the test wants a few score", want)
	}
	a := mustRun(t, f, Options{Target: g.url})
	b := mustRun(t, f, Options{Target: g.url})
	if a.Unique != want || b.Unique != want {
		t.Errorf("poisson runs issued %d and %d, want %d both times", a.Unique, b.Unique, want)
	}
	if a.Name != "load" {
		t.Errorf("unnamed scenario's row is %q, want load", a.Name)
	}
}

func TestMaxRequestsCaps(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	f := loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		s.Clients.Rate = []scenario.RateStep{{RPS: 1000}}
	})
	start := time.Now()
	row := mustRun(t, f, Options{Target: g.url, MaxRequests: 25})
	if row.Unique != 25 || len(g.seen()) != 25 {
		t.Errorf("issued %d (server saw %d), want 25", row.Unique, len(g.seen()))
	}
	if took := time.Since(start); took > 500*ms {
		t.Errorf("capped run took %v; it should stop issuing at the cap", took)
	}
}
