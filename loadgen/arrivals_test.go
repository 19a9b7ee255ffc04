package loadgen

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/scenario"
)

const ms = time.Millisecond

// rampSteps: 20/s for a second, then a one-second ramp to 60/s, held. Over
// 3 s that is 20 + 40 + 60 = 120 requests.
var rampSteps = []scenario.RateStep{{At: 0, RPS: 20}, {At: time.Second, RPS: 60, Ramp: time.Second}}

func countUntil(a *arrivals, d time.Duration) int {
	n := 0
	for {
		at, ok := a.next()
		if !ok || at > d+time.Microsecond {
			return n
		}
		n++
	}
}

func TestScheduleRateAndIntegral(t *testing.T) {
	s := newSchedule(rampSteps, 1, 1)
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{0, 20}, {999 * ms, 20}, {1500 * ms, 40}, {2 * time.Second, 60}, {time.Hour, 60}} {
		if got := s.rate(c.at); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("rate(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	if got := s.integral(3 * time.Second); math.Abs(got-120) > 1e-9 {
		t.Errorf("integral = %v, want 120", got)
	}

	// A step before the first is at zero; a step that interrupts a ramp
	// cuts it where it stands.
	s = newSchedule([]scenario.RateStep{{At: time.Second, RPS: 10}, {At: 2 * time.Second, RPS: 50, Ramp: 2 * time.Second}, {At: 3 * time.Second, RPS: 0}}, 1, 1)
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{500 * ms, 0}, {1500 * ms, 10}, {2500 * ms, 20}, {3500 * ms, 0}} {
		if got := s.rate(c.at); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("interrupted: rate(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	if _, ok := newArrivals(s, false, 1).nextAfter(30); ok {
		t.Error("a schedule that ends at zero should run out of arrivals")
	}

	// Scaling time by 0.5 halves the times and doubles the rates; the
	// number of requests stays.
	s = newSchedule(rampSteps, 2, 0.5)
	if got := s.rate(750 * ms); math.Abs(got-160) > 1e-9 {
		t.Errorf("scaled rate(750ms) = %v, want 160", got)
	}
	if got := s.integral(1500 * ms); math.Abs(got-240) > 1e-9 {
		t.Errorf("scaled integral = %v, want 240", got)
	}
}

// nextAfter skips n arrivals and returns the one after.
func (a *arrivals) nextAfter(n int) (time.Duration, bool) {
	for range n {
		if _, ok := a.next(); !ok {
			return 0, false
		}
	}
	return a.next()
}

func TestEvenArrivalsNumberTheIntegral(t *testing.T) {
	s := newSchedule(rampSteps, 1, 1)
	a := newArrivals(s, false, 1)
	if got := countUntil(a, 3*time.Second); got != 120 {
		t.Errorf("even arrivals in 3s = %d, want 120", got)
	}
	// The first arrival comes when one request's worth has accrued.
	a = newArrivals(s, false, 1)
	if at, _ := a.next(); at != 50*ms {
		t.Errorf("first arrival at %v, want 50ms", at)
	}
	// Inside the ramp arrivals follow the integral: the 40th (the 20th in
	// the ramp) lands where 20t + 20t² = 20, at t = (√5−1)/2 s.
	at, _ := newArrivals(s, false, 1).nextAfter(39)
	want := time.Second + time.Duration((math.Sqrt(5)-1)/2*float64(time.Second))
	if d := at - want; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("40th arrival at %v, want %v", at, want)
	}
}

func TestPoissonArrivalsAreSeeded(t *testing.T) {
	s := newSchedule([]scenario.RateStep{{RPS: 200}, {At: time.Second, RPS: 1000, Ramp: time.Second}}, 1, 1)
	dur := 5 * time.Second // integral 200 + 600 + 3000 = 3800
	n1 := countUntil(newArrivals(s, true, 42), dur)
	n2 := countUntil(newArrivals(s, true, 42), dur)
	n3 := countUntil(newArrivals(s, true, 43), dur)
	if n1 != n2 {
		t.Errorf("same seed, different counts: %d and %d", n1, n2)
	}
	if n1 == n3 {
		t.Logf("seeds 42 and 43 happen to give the same count %d", n1)
	}
	// A Poisson count has sd √3800 ≈ 62; five of them is far outside.
	if math.Abs(float64(n1)-3800) > 310 {
		t.Errorf("poisson count %d, expected about 3800", n1)
	}
	a, b := newArrivals(s, true, 42), newArrivals(s, true, 43)
	x, _ := a.nextAfter(10)
	y, _ := b.nextAfter(10)
	if x == y {
		t.Error("different seeds gave the same arrival times")
	}
}

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
	want := countUntil(newArrivals(newSchedule(f.Scenario.Clients.Rate, 1, 1), true, f.Scenario.Seed), 500*ms)
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
