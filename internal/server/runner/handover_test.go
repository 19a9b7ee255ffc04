package runner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
)

// A reload under calls in flight: the new Runner counts the old one's
// calls (its scope's and the global limit's) until they end, so the two
// together never pass the limit; the old one's waiters that start later
// are counted too, and a chain of reloads passes the count along.
func TestHandoverCountsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ac := admission.Config{Global: admission.Fixed(3), MaxDepth: 10, MaxWait: time.Minute}
		cfg := func() lifecycle.Config {
			return oneScope(&fakeLimit{limit: 3}, lifecycle.Total, 0, ac)
		}
		inP := req(admission.Interactive, 0)
		old := NewRunner(cfg(), nil)
		defer old.Close()
		a, b := mustAcquire(t, old, inP), mustAcquire(t, old, inP)
		// A waiter of the old configuration, behind a third call.
		c := mustAcquire(t, old, inP)
		waiting := make(chan *Call, 1)
		go func() { waiting <- mustAcquire(t, old, inP) }()
		synctest.Wait()
		wantState(t, old, 3, [3]int{0, 1, 0})

		next := NewRunner(cfg(), nil)
		defer next.Close()
		old.Handover(next, []int{0})
		wantState(t, next, 3, [3]int{})
		// Full: the new configuration's request waits for the old calls.
		got := make(chan *Call, 1)
		go func() { got <- mustAcquire(t, next, inP) }()
		synctest.Wait()
		wantState(t, next, 3, [3]int{0, 1, 0})

		// A second reload: the newest counts the old calls, passed along.
		newest := NewRunner(cfg(), nil)
		defer newest.Close()
		next.Handover(newest, []int{0})
		wantState(t, newest, 3, [3]int{})

		// An old call ends: the old waiter takes its slot, so nothing
		// frees anywhere.
		a.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		synctest.Wait()
		w := <-waiting
		wantState(t, next, 3, [3]int{0, 1, 0})
		wantState(t, newest, 3, [3]int{})
		// Another ends: the new configuration's waiter starts.
		b.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		synctest.Wait()
		n := <-got
		wantState(t, next, 3, [3]int{})
		wantState(t, newest, 3, [3]int{})
		for _, call := range []*Call{c, w} {
			call.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		}
		synctest.Wait()
		wantState(t, old, 0, [3]int{})
		wantState(t, next, 1, [3]int{})
		wantState(t, newest, 1, [3]int{})
		n.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		synctest.Wait()
		wantIdle(t, old)
		wantIdle(t, next)
		wantIdle(t, newest)
	})
}
