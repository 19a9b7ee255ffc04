package evalrunner

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-gw/sluice/internal/core/evals"
)

// The runner runs every target's set on schedule on the bubble's fake
// clock, reports a degraded target once, and leaves no goroutine behind
// after Close (synctest.Test fails if one is left blocked).
func TestRunnerOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[int]int{}
		var trans []evals.Transition
		call := func(ctx context.Context, s *evals.Set, target int, c evals.Case) evals.Result {
			mu.Lock()
			calls[target]++
			mu.Unlock()
			time.Sleep(2 * time.Second) // the provider takes its time
			if target == 1 {
				return evals.Result{Answered: true, Reason: c.Check.Judge("no"), Latency: 2 * time.Second}
			}
			return evals.Result{Answered: true, Reason: c.Check.Judge("ok"), Latency: 2 * time.Second}
		}
		r := NewRunner(evals.Options{Sets: []*evals.Set{testSet(3)}, MaxInFlight: 2, Seed: 5}, nil, call, Hooks{
			Transition: func(tr evals.Transition) { trans = append(trans, tr) },
		})
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		mu.Lock()
		// About five runs of three cases per target in five minutes.
		if calls[0] < 12 || calls[0] > 18 || calls[1] < 12 || calls[1] > 18 {
			t.Errorf("calls per target %v, want about 15 each", calls)
		}
		mu.Unlock()
		if len(trans) != 1 || trans[0].Target != 1 || !trans[0].Degraded {
			t.Errorf("transitions %+v, want the backup degraded once", trans)
		}
		if !r.Degraded("chat", 1) || r.Degraded("chat", 0) {
			t.Error("Degraded disagrees")
		}
		st := r.Status()
		if p := st[0].Targets[1].PassRate; p == nil || *p != 0 {
			t.Errorf("backup pass rate %v, want 0", p)
		}
		r.Close()
	})
}

// Close cancels the calls in flight and waits for them.
func TestRunnerCloseCancelsCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{}, 10)
		call := func(ctx context.Context, s *evals.Set, target int, c evals.Case) evals.Result {
			started <- struct{}{}
			<-ctx.Done()
			return evals.Result{Reason: "cancelled"}
		}
		s := testSet(1)
		s.Timeout = time.Hour
		r := NewRunner(evals.Options{Sets: []*evals.Set{s}}, nil, call, Hooks{
			Result: func(*evals.Set, int, evals.Case, evals.Result, float64, int) {
				t.Error("a cancelled call was recorded")
			},
		})
		<-started
		r.Close()
		r.Close() // twice is fine
	})
}

// A runner with no sets runs nothing and stops.
func TestRunnerWithNothingToRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRunner(evals.Options{}, nil, func(context.Context, *evals.Set, int, evals.Case) evals.Result {
			t.Error("called with no sets")
			return evals.Result{}
		}, Hooks{})
		time.Sleep(time.Hour)
		r.Close()
	})
}

// testSet is a set of cases that each pass on "ok", over a primary and a
// backup target, as evals' own tests build it.
func testSet(cases int) *evals.Set {
	s := &evals.Set{Model: "chat", Targets: []evals.Target{{Provider: "primary", Upstream: "m1"}, {Provider: "backup", Upstream: "m2"}},
		Interval: time.Minute, Timeout: 10 * time.Second, Threshold: 0.8, Window: 2}
	for i := range cases {
		s.Cases = append(s.Cases, evals.Case{Name: string(rune('a' + i)), Prompt: "say ok", Check: evals.Exact("ok")})
	}
	return s
}
