package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// routeEngine has two scopes, both with breakers that trip after 4 slow
// calls judged over 4 s.
func routeEngine(t *testing.T, probeInterval time.Duration) *Engine {
	t.Helper()
	mk := func() *breaker.Breaker {
		b, err := breaker.New(breaker.Config{MinCalls: 4, Window: 4 * time.Second, SlowThreshold: time.Second,
			OpenFor: 5 * time.Second, OpenForMax: 5 * time.Second, Probes: 2, ProbeInterval: probeInterval})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return New(Config{
		Admission: admission.Config{Global: admission.Fixed(100)},
		Scopes:    []ScopeConfig{{Name: "primary", Breaker: mk()}, {Name: "backup", Breaker: mk()}},
	})
}

func at(d time.Duration) time.Time { return t0.Add(d) }

// tripPrimary sends four calls to the primary and lets them go slow.
func tripPrimary(t *testing.T, e *Engine) {
	t.Helper()
	var ids []ID
	for i := range 4 {
		a, _ := e.Arrive(at(time.Duration(i)*time.Millisecond), Request{Targets: []int{0, 1}})
		if a.Verdict != admission.Admitted || a.Target != 0 {
			t.Fatalf("call %d: verdict %v target %d", i, a.Verdict, a.Target)
		}
		ids = append(ids, a.ID)
	}
	rd := e.Tick(at(1100 * time.Millisecond)) // each passes 1 s in flight
	if len(rd.Transitions) == 0 || rd.Transitions[0].To != breaker.Open || rd.Transitions[0].Scope != 0 {
		t.Fatalf("want the primary's breaker to open, got %+v", rd.Transitions)
	}
	for _, id := range ids {
		e.Finish(at(1200*time.Millisecond), id, Outcome{Kind: Cancelled})
	}
}

func TestRouteFailsOverWhenPrimaryTrips(t *testing.T) {
	e := routeEngine(t, 0)
	tripPrimary(t, e)
	a, _ := e.Arrive(at(2*time.Second), Request{Targets: []int{0, 1}})
	if a.Verdict != admission.Admitted || a.Target != 1 {
		t.Fatalf("after the trip: verdict %v target %d, want admitted to the backup (1)", a.Verdict, a.Target)
	}
}

func TestRouteShedsWhenEveryTargetIsUnhealthy(t *testing.T) {
	e := routeEngine(t, 0)
	tripPrimary(t, e)
	// A model with only the primary has nowhere to go.
	a, _ := e.Arrive(at(2*time.Second), Request{Targets: []int{0}})
	if a.Verdict != admission.Rejected || a.Refusal.Reason != admission.ReasonUnavailable {
		t.Fatalf("verdict %v reason %q, want rejected no_healthy_target", a.Verdict, a.Refusal.Reason)
	}
	// Retry-After points at the breaker's next probe, not a constant.
	if ra := a.Refusal.RetryAfter; ra < 3*time.Second || ra > 5*time.Second {
		t.Errorf("Retry-After %v; the primary probes again about 4 s later", ra)
	}
}

func TestRouteProbesThenFailsBackInSteps(t *testing.T) {
	e := routeEngine(t, 0)
	tripPrimary(t, e)
	// After OpenFor the primary is half-open: the next two requests are
	// its probes; the rest go to the backup.
	now := 7 * time.Second
	e.Tick(at(now))
	var probes []ID
	for i := range 4 {
		a, _ := e.Arrive(at(now), Request{Targets: []int{0, 1}})
		if i < 2 {
			if a.Target != 0 {
				t.Fatalf("request %d went to %d, want a probe to the primary", i, a.Target)
			}
			probes = append(probes, a.ID)
		} else if a.Target != 1 {
			t.Fatalf("request %d went to %d, want the backup while probes are out", i, a.Target)
		}
	}
	for _, id := range probes {
		e.Finish(at(now+100*time.Millisecond), id, Outcome{Kind: OK})
	}
	// Recovering at 10%: of the next 100 requests, exactly 10 go to the
	// primary (the shares are counted, not drawn).
	primary := 0
	for range 100 {
		a, _ := e.Arrive(at(now+200*time.Millisecond), Request{Targets: []int{0, 1}})
		if a.Target == 0 {
			primary++
		}
		e.Finish(at(now+200*time.Millisecond), a.ID, Outcome{Kind: Cancelled})
	}
	if primary != 10 {
		t.Errorf("%d of 100 went to the recovering primary, want 10", primary)
	}
}

// With nowhere else to go, a recovering target takes every request
// rather than shedding the other 90%.
func TestRouteRecoveringSoleTargetTakesEverything(t *testing.T) {
	e := routeEngine(t, 0)
	tripPrimary(t, e)
	now := 7 * time.Second
	e.Tick(at(now))
	for range 2 {
		a, _ := e.Arrive(at(now), Request{Targets: []int{0}})
		e.Finish(at(now+100*time.Millisecond), a.ID, Outcome{Kind: OK})
	}
	for i := range 20 {
		a, _ := e.Arrive(at(now+200*time.Millisecond), Request{Targets: []int{0}})
		if a.Verdict != admission.Admitted {
			t.Fatalf("request %d: %v (%s); a recovering sole target must take it", i, a.Verdict, a.Refusal.Reason)
		}
		e.Finish(at(now+200*time.Millisecond), a.ID, Outcome{Kind: Cancelled})
	}
}

// A half-open probe ends at its own timeout: the engine expires it then,
// not at the request's much later deadline.
func TestProbeEndsAtItsOwnTimeout(t *testing.T) {
	e := routeEngine(t, 500*time.Millisecond)
	tripPrimary(t, e)
	now := 7 * time.Second
	e.Tick(at(now))
	a, _ := e.Arrive(at(now), Request{Targets: []int{0}, Deadline: at(now + time.Minute)})
	if a.Verdict != admission.Admitted {
		t.Fatalf("probe: %v", a.Verdict)
	}
	next, ok := e.NextTimer()
	if !ok || next.After(at(now+time.Second+time.Millisecond)) {
		t.Fatalf("next timer %v, want the probe's 1 s timeout", next.Sub(t0))
	}
	rd := e.Tick(at(now + time.Second))
	if len(rd.Expire) != 1 || rd.Expire[0] != a.ID {
		t.Fatalf("expired %v, want the probe", rd.Expire)
	}
}

// A client's bad requests (400, 422, a 404 about what its body names...)
// say nothing about the provider and cannot trip its breaker; a target
// that refuses our key (401, 403) fails every request, and does. (A 404
// that says the model is unknown: clientfault_test.go.)
func TestClientErrorsDoNotTripTheBreaker(t *testing.T) {
	for _, c := range []struct {
		status int
		trips  bool
	}{{400, false}, {413, false}, {422, false}, {401, true}, {404, false}, {500, true}} {
		e := routeEngine(t, 0) // trips at 4 counted calls
		for i := range 4 {
			now := at(time.Duration(i) * time.Millisecond)
			a, _ := e.Arrive(now, Request{Targets: []int{0, 1}})
			e.Finish(now, a.ID, Outcome{Kind: Failed, Status: c.status})
		}
		if st, _ := e.scopes[0].cfg.Breaker.State(at(10 * time.Millisecond)); (st == breaker.Open) != c.trips {
			t.Errorf("four %ds: breaker %v, want tripped %v", c.status, st, c.trips)
		}
	}
}
