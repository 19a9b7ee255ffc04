package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// ftEngine: two targets, the first-token deadline at a 10 s ceiling, 1 s
// floor and factor 4, the hedge budget's default share and burst.
func ftEngine(t *testing.T, withBreaker bool) *Engine {
	t.Helper()
	sc := []ScopeConfig{{Fixed: 10}, {Fixed: 10}}
	if withBreaker {
		b, err := breaker.New(breaker.Config{MinCalls: 100, Window: 60 * time.Second, SlowThreshold: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		sc[0] = ScopeConfig{Breaker: b}
	}
	return New(Config{
		Admission:  admission.Config{Global: admission.Fixed(100)},
		Scopes:     sc,
		Hedge:      HedgeConfig{Budget: 0.05, Burst: 10},
		FirstToken: FirstTokenConfig{Ceiling: 10 * time.Second, Floor: time.Second, Factor: 4},
	})
}

// ftAfter is when the deadline of a request arriving at now fires, as
// the engine arms it (zero: not armed).
func ftAfter(e *Engine, now time.Duration, r Request) (time.Duration, ID) {
	a, _ := e.Arrive(at(now), r)
	q, _ := e.reqs.Get(a.ID)
	if !q.armed(hedgeTimer) {
		return 0, a.ID
	}
	return q.timerAt[hedgeTimer].Sub(at(now)), a.ID
}

func TestFirstTokenDeadline(t *testing.T) {
	two := Request{Targets: []int{0, 1}, Stream: true}
	answer := func(e *Engine, id ID, start, ttft time.Duration) {
		e.Commit(at(start+ttft), id, 0)
		e.Finish(at(start+ttft+time.Second), id, Outcome{Kind: OK})
	}
	for _, c := range []struct {
		name string
		// history: the target's earlier times to first token.
		history []time.Duration
		req     Request
		want    time.Duration
	}{
		{"cold: the ceiling", nil, two, 10 * time.Second},
		{"fast target: the floor", []time.Duration{100 * time.Millisecond}, two, time.Second},
		{"factor times the recent TTFT", []time.Duration{time.Second}, two, 4 * time.Second},
		{"a slow target: the ceiling", []time.Duration{5 * time.Second}, two, 10 * time.Second},
		{"the EWMA follows a change", []time.Duration{time.Second, 2 * time.Second}, two, time.Duration(4 * 1.2 * float64(time.Second))},
		{"whole answers have their own history", []time.Duration{100 * time.Millisecond}, Request{Targets: []int{0, 1}}, 10 * time.Second},
		{"the client's deadline bounds it (half its time)", nil, Request{Targets: []int{0, 1}, Stream: true, Deadline: at(100*time.Second + 6*time.Second)}, 3 * time.Second},
		{"a per-model ceiling", nil, Request{Targets: []int{0, 1}, Stream: true, FirstTokenCeiling: 60 * time.Second}, 60 * time.Second},
		{"off per model", nil, Request{Targets: []int{0, 1}, Stream: true, FirstTokenCeiling: -1}, 0},
		{"no other target: nothing to race", nil, Request{Targets: []int{0}, Stream: true}, 0},
		{"a shorter hedge_after hedges instead", nil, Request{Targets: []int{0, 1}, Stream: true, HedgeAfter: 2 * time.Second}, 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := ftEngine(t, false)
			for i, d := range c.history {
				a, _ := e.Arrive(at(time.Duration(i)*10*time.Second), two)
				answer(e, a.ID, time.Duration(i)*10*time.Second, d)
			}
			if got, _ := ftAfter(e, 100*time.Second, c.req); got != c.want {
				t.Errorf("deadline %v, want %v", got, c.want)
			}
		})
	}

	t.Run("a silent call gets a second call on the next target; its token wins; the loser counts slow", func(t *testing.T) {
		e := ftEngine(t, true)
		_, id := ftAfter(e, 0, two)
		rd := e.Tick(at(10 * time.Second))
		if len(rd.Second) != 1 || rd.Second[0] != (SecondCall{ID: id, Target: 1, Kind: FirstToken}) {
			t.Fatalf("second calls %+v, want a first-token call to target 1", rd.Second)
		}
		if !e.Commit(at(10*time.Second+200*time.Millisecond), id, 1) {
			t.Fatal("the second call's token came first and must win")
		}
		e.Finish(at(10*time.Second+200*time.Millisecond), id, Outcome{Kind: Cancelled})
		if st := e.scopes[0].cfg.Breaker.Stats(at(11 * time.Second)); st.Slow != 1 {
			t.Errorf("the silent call counted %d slow in its breaker, want 1", st.Slow)
		}
		if _, ok := e.FinishSecond(at(12*time.Second), id, Outcome{Kind: OK}); !ok {
			t.Fatal("FinishSecond")
		}
		if st := e.SecondStats(); st.FirstToken != 1 || st.Won != 1 || st.Fired != 0 {
			t.Errorf("stats %+v, want one first-token call, won, and no hedge", st)
		}
		if e.hedges.tokens != 9 {
			t.Errorf("hedge budget %v, want the burst less one", e.hedges.tokens)
		}
		if e.reqs.Len() != 0 {
			t.Errorf("%d requests left", e.reqs.Len())
		}
	})
	t.Run("a first token in time: no second call", func(t *testing.T) {
		e := ftEngine(t, false)
		_, id := ftAfter(e, 0, two)
		e.Commit(at(9*time.Second), id, 0)
		if rd := e.Tick(at(10 * time.Second)); len(rd.Second) != 0 {
			t.Fatalf("second call after a first token: %+v", rd.Second)
		}
	})
	t.Run("no budget: no second call", func(t *testing.T) {
		e := ftEngine(t, false)
		e.hedges.tokens = 0
		ftAfter(e, 0, two)
		if rd := e.Tick(at(10 * time.Second)); len(rd.Second) != 0 || e.SecondStats().NoBudget != 1 {
			t.Fatalf("second calls %+v, stats %+v; want none, refused by the budget", rd.Second, e.SecondStats())
		}
	})
	t.Run("never the same target", func(t *testing.T) {
		e := ftEngine(t, false)
		// The second target is full: the deadline has nowhere to go, and
		// does not fall back to the silent one.
		for range 10 {
			e.Arrive(at(0), Request{Targets: []int{1}})
		}
		ftAfter(e, 0, two)
		if rd := e.Tick(at(10 * time.Second)); len(rd.Second) != 0 || e.SecondStats().NoTarget != 1 {
			t.Fatalf("second calls %+v; want none", rd.Second)
		}
	})
	t.Run("engine built in code: off", func(t *testing.T) {
		e := hedgeEngine(1, 2)
		if got, _ := ftAfter(e, 0, two); got != 0 {
			t.Errorf("armed at %v with no FirstTokenConfig", got)
		}
	})
}
