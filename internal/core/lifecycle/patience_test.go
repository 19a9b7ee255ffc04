package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// patienceEngine: one provider, its model's only target, probed
// synthetically every interval once its breaker opens, each probe timed
// out at the slow threshold, with the default hold budget (1 s).
func patienceEngine(t *testing.T, slow, interval time.Duration) *Engine {
	t.Helper()
	b, err := breaker.New(breaker.Config{MinCalls: 4, Window: 4 * time.Second, SlowThreshold: slow,
		Steady: true, ProbeInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{
		Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 10 * time.Second},
		Scopes:    []ScopeConfig{{Name: "solo", Breaker: b, SyntheticProbes: true}},
	})
}

// A provider out of rotation whose next verdict is seconds away (here:
// open for errors, so nothing goes through it, and with nothing known of
// its health a verdict is due only at a probe's 3 s timeout): a request
// without a deadline of its own is refused at once, not held for the
// verdict, with a Retry-After that names when the verdict is due. So is
// one whose deadline is a minute away: a long deadline is how long a
// client waits for an answer, not for a refusal.
func TestFarVerdictRefusesAtOnce(t *testing.T) {
	e := patienceEngine(t, 3*time.Second, 500*time.Millisecond)
	for i := range 4 {
		id := arriveAll(t, e, at(time.Duration(i)*time.Millisecond), 1, []int{0}, 0)[0]
		e.Finish(at(10*time.Millisecond), id, Outcome{Kind: Failed, Status: 500})
	}
	if st, _ := e.scopes[0].cfg.Breaker.State(at(10 * time.Millisecond)); st != breaker.Open {
		t.Fatalf("breaker %v after four errors, want open", st)
	}
	// Open until 0.51 s; the first probe goes then, its verdict due at
	// its 3 s timeout: 3.51 s, 3.4 s after this arrival.
	const wantRA = 3400 * time.Millisecond
	for _, r := range []Request{{Targets: []int{0}}, {Targets: []int{0}, Deadline: at(110*time.Millisecond + time.Minute)}} {
		a, _ := e.Arrive(at(110*time.Millisecond), r)
		if a.Verdict != admission.Rejected || a.Refusal.Reason != admission.ReasonUnavailable {
			t.Fatalf("deadline %v: %v %q, want refused at once (no_healthy_target): the verdict is 3.4 s away, past the 1 s hold budget",
				r.Deadline, a.Verdict, a.Refusal.Reason)
		}
		if d := a.Refusal.RetryAfter; d < wantRA-50*time.Millisecond || d > wantRA+50*time.Millisecond {
			t.Errorf("deadline %v: Retry-After %v, want about %v: when the next verdict is due", r.Deadline, d, wantRA)
		}
	}
	if n := e.reqs.Len(); n != 0 {
		t.Errorf("%d requests left in the engine", n)
	}
}

// healthyThenTripped: four healthy calls of 100 ms, then four that go
// slow past 1 s; the breaker opens at 1.3 s and probes every 200 ms
// from 1.5 s.
func healthyThenTripped(t *testing.T) *Engine {
	t.Helper()
	e := patienceEngine(t, time.Second, 200*time.Millisecond)
	for _, id := range arriveAll(t, e, at(0), 4, []int{0}, 0) {
		e.Finish(at(100*time.Millisecond), id, Outcome{Kind: OK})
	}
	slow := arriveAll(t, e, at(200*time.Millisecond), 4, []int{0}, 0)
	if rd := e.Tick(at(1300 * time.Millisecond)); len(rd.Transitions) == 0 || rd.Transitions[0].To != breaker.Open {
		t.Fatalf("want the breaker open at 1.3 s, got %+v", rd.Transitions)
	}
	for _, id := range slow {
		e.Finish(at(1300*time.Millisecond), id, Outcome{Kind: Cancelled})
	}
	return e
}

// A verdict due soon is waited for: the provider answered in 100 ms
// when healthy, so a probe that passes does so about 100 ms after it
// was sent. A request that arrives with a probe in flight is held until
// that probe's pass is due (its send time, 100 ms, and a tenth for
// jitter: 110 ms); a probe that has not passed by then is, for the
// request, a failing one, and it is refused then, with a Retry-After
// naming the next verdict, not at the probe's 1 s timeout. A request
// held when a probe passes starts.
func TestNearVerdictIsWaitedFor(t *testing.T) {
	e := healthyThenTripped(t)
	rd := e.Tick(at(1500 * time.Millisecond))
	if len(rd.Probe) != 1 {
		t.Fatalf("want a probe at 1.5 s, got %+v", rd.Probe)
	}
	a, _ := e.Arrive(at(1550*time.Millisecond), Request{Targets: []int{0}})
	if a.Verdict != admission.Queued {
		t.Fatalf("a request with a verdict due in 100 ms: %v %+v, want held for it", a.Verdict, a.Refusal)
	}
	if next, ok := e.NextTimer(); !ok || !next.Equal(at(1610*time.Millisecond)) {
		t.Fatalf("next timer %v %v, want the held request's verdict at 1.61 s", next.Sub(t0), ok)
	}
	if rd := e.Tick(at(1600 * time.Millisecond)); len(rd.Refuse) != 0 {
		t.Fatalf("refused before its verdict was due: %+v", rd.Refuse)
	}
	rd = e.Tick(at(1610 * time.Millisecond))
	f, ok := refused(rd)[a.ID]
	if !ok || f.Reason != admission.ReasonUnavailable {
		t.Fatalf("at 1.61 s, the probe it waited for overdue: %+v, want it refused", rd.Refuse)
	}
	// The next probe goes at 1.7 s; its pass is due at 1.81 s.
	if want := 200 * time.Millisecond; f.RetryAfter != want {
		t.Errorf("Retry-After %v, want %v: the next verdict", f.RetryAfter, want)
	}
	rd = e.Tick(at(1700 * time.Millisecond))
	if len(rd.Probe) != 1 {
		t.Fatalf("want a probe at 1.7 s, got %+v", rd.Probe)
	}
	b, _ := e.Arrive(at(1720*time.Millisecond), Request{Targets: []int{0}})
	if b.Verdict != admission.Queued {
		t.Fatalf("a request with a verdict due in 90 ms: %v, want held", b.Verdict)
	}
	rd, _ = e.FinishProbe(at(1800*time.Millisecond), rd.Probe[0].ID, Outcome{Kind: OK})
	if len(rd.Start) != 1 || rd.Start[0] != b.ID {
		t.Fatalf("after a passing probe: started %v, want the held request %d", rd.Start, b.ID)
	}
}

// However a held request's probe fares (here: it never answers), the
// request is told by its patience: the hold budget bounds every hold.
func TestHoldEndsWithinTheBudget(t *testing.T) {
	e := healthyThenTripped(t)
	e.Tick(at(1500 * time.Millisecond)) // a probe goes out, and never answers
	a, _ := e.Arrive(at(1500*time.Millisecond), Request{Targets: []int{0}})
	if a.Verdict != admission.Queued {
		t.Fatalf("%v, want held", a.Verdict)
	}
	var ended time.Time
	for now := at(1500 * time.Millisecond); now.Before(at(3 * time.Second)); now = now.Add(10 * time.Millisecond) {
		if _, ok := refused(e.Tick(now))[a.ID]; ok {
			ended = now
			break
		}
	}
	if ended.IsZero() {
		t.Fatalf("held request not refused by 3 s, want within the %v budget of its arrival at 1.5 s", DefaultHoldBudget)
	}
	if waited := ended.Sub(at(1500 * time.Millisecond)); waited > DefaultHoldBudget {
		t.Fatalf("held request refused after %v, want within the %v budget", waited, DefaultHoldBudget)
	}
}

// A provider out of rotation for slowness still serves through it the
// requests it can answer in time, but only while it has a slot free: a
// request does not queue behind its slow calls, whose slots free only
// as they end. With no verdict due within its patience to hold it for
// (probes time out at 2 s), it is refused at once.
func TestThroughNeedsAFreeSlot(t *testing.T) {
	b, err := breaker.New(breaker.Config{MinCalls: 4, Window: 4 * time.Second, SlowThreshold: 2 * time.Second,
		Steady: true, ProbeInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 10 * time.Second},
		Scopes:    []ScopeConfig{{Name: "solo", Fixed: 5, Breaker: b, SyntheticProbes: true}},
	})
	ids := arriveAll(t, e, at(0), 4, []int{0}, 0)
	e.Tick(at(2100 * time.Millisecond)) // trip: all four slow
	for _, id := range ids {
		e.Finish(at(3*time.Second), id, Outcome{Kind: OK}) // they answer in 3 s
	}
	// The provider answers in 3 s: a request with 15 s left goes
	// through, and holds one slot of five; four more fill them.
	for i := range 5 {
		a, _ := e.Arrive(at(3*time.Second), Request{Targets: []int{0}, Deadline: at(18 * time.Second)})
		if q, _ := e.reqs.Get(a.ID); a.Verdict != admission.Admitted || !q.through {
			t.Fatalf("request %d with 15 s left, provider answering in 3 s: %v, want admitted through", i, a.Verdict)
		}
	}
	a, _ := e.Arrive(at(3*time.Second), Request{Targets: []int{0}, Deadline: at(18 * time.Second)})
	if a.Verdict != admission.Rejected || a.Refusal.Reason != admission.ReasonUnavailable {
		q, _ := e.reqs.Get(a.ID)
		t.Fatalf("a sixth with every slot taken by slow calls: %v (through %v), want refused at once", a.Verdict, q != nil && q.through)
	}
}
