package breaker

import (
	"testing"
	"time"
)

// A breaker follows its fleet: another replica's trip opens it, the
// fleet prober's recovery lifts it, and nothing moves it backwards.
func TestAdopt(t *testing.T) {
	b, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	b.Adopt(t0, Open, 0)
	if st, _ := b.State(t0); st != Open {
		t.Fatalf("after adopting a trip: %v, want open", st)
	}
	tr := b.Transitions()
	if len(tr) != 1 || tr[0].Reason != ReasonFleet {
		t.Fatalf("transitions %+v, want one, for the fleet", tr)
	}
	b.Adopt(t0.Add(time.Second), Recovering, 1)
	if st, step := b.State(t0.Add(time.Second)); st != Recovering || step != 1 {
		t.Fatalf("after adopting recovery at step 1: %v step %d", st, step)
	}
	b.Adopt(t0.Add(2*time.Second), Recovering, 0)
	if _, step := b.State(t0.Add(2 * time.Second)); step != 1 {
		t.Fatalf("a lower step moved the breaker back to %d", step)
	}
	b.Adopt(t0.Add(3*time.Second), Closed, 0)
	if st, _ := b.State(t0.Add(3 * time.Second)); st != Closed {
		t.Fatalf("after adopting closed: %v", st)
	}
	b.Adopt(t0.Add(4*time.Second), Recovering, 0)
	if st, _ := b.State(t0.Add(4 * time.Second)); st != Closed {
		t.Fatalf("a recovery verdict reopened a closed breaker: %v", st)
	}
}

// Two replicas each see six failing calls, too few alone (MinCalls 10);
// exchanging their evidence, each judges twelve, and both trip.
func TestSharedEvidence(t *testing.T) {
	a, b := mustNew(t, Config{ConsecutiveErrors: -1}), mustNew(t, Config{ConsecutiveErrors: -1})
	a.ShareEvidence()
	b.ShareEvidence()
	calls(t, a, at(time.Second), 6, Outcome{Kind: Error})
	calls(t, b, at(time.Second), 6, Outcome{Kind: Error})
	wantState(t, a, at(time.Second), Closed, 1)
	ea, eb := a.DrainEvidence(), b.DrainEvidence()
	if len(ea) != 1 || ea[0].Calls != 6 || ea[0].Errors != 6 {
		t.Fatalf("a's evidence %+v, want one bucket of 6 errors", ea)
	}
	if again := a.DrainEvidence(); len(again) != 0 {
		t.Fatalf("drained twice: %+v", again)
	}
	a.AddEvidence(at(time.Second), eb)
	b.AddEvidence(at(time.Second), ea)
	wantState(t, a, at(time.Second), Open, 0)
	wantState(t, b, at(time.Second), Open, 0)
	// What a tripped breaker already judged is not judged again, and a
	// breaker's evidence from others is never passed on as its own.
	if ev := a.DrainEvidence(); len(ev) != 0 {
		t.Fatalf("a passed on evidence it did not see: %+v", ev)
	}
	c := mustNew(t, Config{})
	c.AddEvidence(at(2*time.Second), []Evidence{{Start: at(time.Second), Calls: 5, Errors: 9}})
	wantState(t, c, at(2*time.Second), Closed, 1)
}
