package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// holdEngine: one provider, its model's only target, probed
// synthetically every 200 ms once its breaker opens, each probe timed
// out after 1 s, with a queue to hold requests in and a hold budget of
// 2 s: with nothing known of the provider's health, a verdict is due at
// a probe's timeout, and 2 s covers one.
func holdEngine(t *testing.T) *Engine {
	t.Helper()
	b, err := breaker.New(breaker.Config{MinCalls: 4, Window: 4 * time.Second, SlowThreshold: time.Second,
		Steady: true, ProbeInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{
		Admission:  admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 10 * time.Second},
		Scopes:     []ScopeConfig{{Name: "solo", Breaker: b, SyntheticProbes: true}},
		HoldBudget: 2 * time.Second,
	})
}

// tripSolo sends four calls that go slow; the breaker opens at 1.1 s and
// probes from 1.3 s.
func tripSolo(t *testing.T, e *Engine) {
	t.Helper()
	ids := arriveAll(t, e, at(0), 4, []int{0}, 0)
	if rd := e.Tick(at(1100 * time.Millisecond)); len(rd.Transitions) == 0 || rd.Transitions[0].To != breaker.Open {
		t.Fatalf("want the breaker open, got %+v", rd.Transitions)
	}
	for _, id := range ids {
		e.Finish(at(1100*time.Millisecond), id, Outcome{Kind: Cancelled})
	}
}

func refused(rd Ready) map[ID]admission.Refusal {
	m := map[ID]admission.Refusal{}
	for _, f := range rd.Refuse {
		m[f.Ticket] = f
	}
	return m
}

// A request that arrives while the provider is out, and that it cannot be
// judged able to answer in time (here: no deadline to judge by), waits
// for the verdict of a probe sent after it: a failing probe sent before
// it does not refuse it, a failing one sent after does, and a passing
// one starts the requests still held.
func TestHeldForTheNextProbesVerdict(t *testing.T) {
	e := holdEngine(t)
	tripSolo(t, e)
	rd := e.Tick(at(1300 * time.Millisecond))
	if len(rd.Probe) != 1 {
		t.Fatalf("want a probe at 1.3 s, got %+v", rd.Probe)
	}
	p1 := rd.Probe[0].ID
	early, _ := e.Arrive(at(1400*time.Millisecond), Request{Targets: []int{0}})
	if early.Verdict != admission.Queued {
		t.Fatalf("a request while the provider is out: %v, want held in the queue", early.Verdict)
	}
	rd = e.Tick(at(1500 * time.Millisecond))
	if len(rd.Probe) != 1 {
		t.Fatalf("want a probe at 1.5 s, got %+v", rd.Probe)
	}
	p2 := rd.Probe[0].ID
	late, _ := e.Arrive(at(1600*time.Millisecond), Request{Targets: []int{0}})
	// p1 was sent before either arrived: its failure refuses nobody.
	rd, _ = e.FinishProbe(at(1700*time.Millisecond), p1, Outcome{Kind: TimedOut})
	if len(rd.Refuse) != 0 || len(rd.Start) != 0 {
		t.Fatalf("a failed probe sent before both arrived moved them: %+v", rd)
	}
	// p2 was sent after early arrived, before late did.
	rd, _ = e.FinishProbe(at(1800*time.Millisecond), p2, Outcome{Kind: TimedOut})
	f, ok := refused(rd)[early.ID]
	if !ok || len(rd.Refuse) != 1 || f.Reason != admission.ReasonUnavailable || f.RetryAfter <= 0 {
		t.Fatalf("after a probe sent after it failed, the early request: %+v, want refused no_healthy_target with a Retry-After", rd.Refuse)
	}
	// The next probe passes: late starts.
	rd = e.Tick(at(1900 * time.Millisecond))
	if len(rd.Probe) != 1 {
		t.Fatalf("want a probe at 1.9 s, got %+v", rd.Probe)
	}
	rd, _ = e.FinishProbe(at(2*time.Second), rd.Probe[0].ID, Outcome{Kind: OK})
	if len(rd.Start) != 1 || rd.Start[0] != late.ID {
		t.Fatalf("after a passing probe: started %v, want the held request %d", rd.Start, late.ID)
	}
	if tg, ok := e.Target(late.ID); !ok || tg != 0 {
		t.Errorf("held request's target %d %v", tg, ok)
	}
	e.Finish(at(2100*time.Millisecond), late.ID, Outcome{Kind: OK})
	if e.reqs.Len() != 0 {
		t.Errorf("%d requests left in the engine", e.reqs.Len())
	}
}

// A request that cannot wait for the verdict and a healthy call after
// it is refused at once, as is one with no place in the queue.
func TestHoldNeedsTimeAndRoom(t *testing.T) {
	e := holdEngine(t)
	tripSolo(t, e)
	a, _ := e.Arrive(at(1200*time.Millisecond), Request{Targets: []int{0}, Deadline: at(2 * time.Second)})
	if a.Verdict != admission.Rejected || a.Refusal.Reason != admission.ReasonUnavailable {
		t.Fatalf("a request with 0.8 s left: %v %q, want refused at once", a.Verdict, a.Refusal.Reason)
	}
	for i := range 10 {
		if a, _ := e.Arrive(at(1200*time.Millisecond), Request{Targets: []int{0}}); a.Verdict != admission.Queued {
			t.Fatalf("request %d: %v, want held", i, a.Verdict)
		}
	}
	a, _ = e.Arrive(at(1200*time.Millisecond), Request{Targets: []int{0}})
	if a.Verdict != admission.Rejected || a.Refusal.Reason != admission.ReasonUnavailable || a.Refusal.RetryAfter <= 0 {
		t.Fatalf("with the queue full: %v %+v, want refused no_healthy_target", a.Verdict, a.Refusal)
	}
}

// Requests already waiting for the provider when it trips are held too,
// their breaker tickets handed back.
func TestWaitersAtTheTripAreHeld(t *testing.T) {
	b, err := breaker.New(breaker.Config{MinCalls: 4, Window: 4 * time.Second, SlowThreshold: time.Second,
		Steady: true, ProbeInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 10 * time.Second},
		Scopes:    []ScopeConfig{{Name: "solo", Fixed: 4, Breaker: b, SyntheticProbes: true}},
	})
	ids := arriveAll(t, e, at(0), 4, []int{0}, 0)
	w, _ := e.Arrive(at(500*time.Millisecond), Request{Targets: []int{0}})
	if w.Verdict != admission.Queued {
		t.Fatalf("fifth request: %v, want queued behind the limit", w.Verdict)
	}
	e.Tick(at(1100 * time.Millisecond)) // trip
	if st := b.Stats(at(1100 * time.Millisecond)); st.InFlight != 4 {
		t.Errorf("breaker holds %d calls, want the 4 in flight (the waiter's ticket handed back)", st.InFlight)
	}
	rd, _ := e.Finish(at(1200*time.Millisecond), ids[0], Outcome{Kind: Cancelled})
	if len(rd.Start) != 0 {
		t.Fatalf("a waiter started on the tripped provider: %+v", rd.Start)
	}
}

// A provider out of rotation for slowness still serves the requests it
// can answer in time: here its calls answer in 3 s, so a request with
// 15 s to spare goes through (with no breaker ticket) and one with 2 s
// does not. Open for errors, it serves nobody.
func TestThroughAnOpenBreaker(t *testing.T) {
	e := holdEngine(t)
	ids := arriveAll(t, e, at(0), 4, []int{0}, 0)
	e.Tick(at(1100 * time.Millisecond)) // trip: all four slow
	for _, id := range ids {
		e.Finish(at(3*time.Second), id, Outcome{Kind: OK}) // they answer in 3 s
	}
	a, _ := e.Arrive(at(3*time.Second), Request{Targets: []int{0}, Deadline: at(18 * time.Second)})
	if a.Verdict != admission.Admitted {
		t.Fatalf("a request with 15 s left, provider answering in 3 s: %v, want admitted", a.Verdict)
	}
	if q, _ := e.reqs.Get(a.ID); !q.through || q.hasTicket {
		t.Errorf("through %v ticket %v, want through with no ticket", q.through, q.hasTicket)
	}
	b, _ := e.Arrive(at(3*time.Second), Request{Targets: []int{0}, Deadline: at(5 * time.Second)})
	if b.Verdict == admission.Admitted {
		t.Fatal("a request with 2 s left went to a provider answering in 3 s")
	}
	// Its answer, slow, neither counts against the breaker nor lets it
	// recover: the probes decide that.
	e.Finish(at(6*time.Second), a.ID, Outcome{Kind: OK})
	if st, _ := e.scopes[0].cfg.Breaker.State(at(6 * time.Second)); st == breaker.Closed || st == breaker.Recovering {
		t.Errorf("breaker %v after a call through it", st)
	}

	// Open for errors: nothing goes through.
	f := holdEngine(t)
	for i := range 4 {
		id := arriveAll(t, f, at(time.Duration(i)*time.Millisecond), 1, []int{0}, 0)[0]
		f.Finish(at(10*time.Millisecond), id, Outcome{Kind: Failed, Status: 500})
	}
	if st, _ := f.scopes[0].cfg.Breaker.State(at(20 * time.Millisecond)); st != breaker.Open {
		t.Fatalf("breaker %v after four errors", st)
	}
	c, _ := f.Arrive(at(20*time.Millisecond), Request{Targets: []int{0}, Deadline: at(15 * time.Second)})
	if q, ok := f.reqs.Get(c.ID); c.Verdict == admission.Admitted || ok && q.through {
		t.Fatalf("a provider open for errors took a request through: %v", c.Verdict)
	}
}
