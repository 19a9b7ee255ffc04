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
