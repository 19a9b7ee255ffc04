package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
)

func hedgeEngine(budget float64, scopes int) *Engine {
	sc := make([]ScopeConfig, scopes)
	for i := range sc {
		sc[i] = ScopeConfig{Fixed: 10}
	}
	return New(Config{
		Admission: admission.Config{Global: admission.Fixed(100)},
		Scopes:    sc,
		Hedge:     HedgeConfig{Budget: budget, Burst: 1},
	})
}

func TestHedging(t *testing.T) {
	two := Request{Targets: []int{0, 1}, HedgeAfter: time.Second}
	t.Run("a call with no first byte is hedged to the next target", func(t *testing.T) {
		e := hedgeEngine(1, 2)
		a, _ := e.Arrive(at(0), two)
		if next, _ := e.NextTimer(); !next.Equal(at(time.Second)) {
			t.Fatalf("next timer %v, want the hedge at 1s", next.Sub(t0))
		}
		rd := e.Tick(at(time.Second))
		if len(rd.Second) != 1 || rd.Second[0] != (SecondCall{ID: a.ID, Target: 1}) {
			t.Fatalf("hedge %+v, want the request to target 1", rd.Second)
		}
		if s := e.Snapshot(at(time.Second)); s.ScopeInFlight[1] != 1 || s.InFlight != 1 {
			t.Errorf("in flight %d, scope 1 %d: the hedge holds a scope slot, not a second global one", s.InFlight, s.ScopeInFlight[1])
		}
	})
	t.Run("a first byte in time means no hedge", func(t *testing.T) {
		e := hedgeEngine(1, 2)
		a, _ := e.Arrive(at(0), two)
		e.FirstByte(at(500*time.Millisecond), a.ID)
		if rd := e.Tick(at(2 * time.Second)); len(rd.Second) != 0 {
			t.Fatalf("hedged after a first byte: %+v", rd.Second)
		}
	})
	t.Run("the budget caps hedges at its share of requests", func(t *testing.T) {
		e := hedgeEngine(0.1, 2) // Burst 1: at most one saved hedge
		var fired int
		for i := range 30 {
			now := time.Duration(i) * 100 * time.Millisecond
			e.Arrive(at(now), two)
			fired += len(e.Tick(at(now)).Second)
		}
		fired += len(e.Tick(at(10 * time.Second)).Second)
		// 30 requests earn 3 hedges, but the bucket holds one at a time.
		if st := e.SecondStats(); fired > 3 || fired < 1 || st.NoBudget == 0 {
			t.Errorf("fired %d hedges for 30 requests at a 10%% budget; stats %+v", fired, st)
		}
	})
	t.Run("the first byte wins; the request ends when both calls have", func(t *testing.T) {
		e := hedgeEngine(1, 2)
		a, _ := e.Arrive(at(0), two)
		e.Tick(at(time.Second))
		if !e.Commit(at(1200*time.Millisecond), a.ID, 1) {
			t.Fatal("the hedge's first byte came first and must win")
		}
		if e.Commit(at(1300*time.Millisecond), a.ID, 0) {
			t.Fatal("the first call answered second and must lose")
		}
		e.Finish(at(1300*time.Millisecond), a.ID, Outcome{Kind: Cancelled}) // the loser, cancelled
		if s := e.Snapshot(at(0)); s.InFlight != 1 {
			t.Fatalf("in flight %d: the request goes on in its hedge", s.InFlight)
		}
		if _, ok := e.FinishSecond(at(2*time.Second), a.ID, Outcome{Kind: OK}); !ok {
			t.Fatal("FinishSecond")
		}
		if s := e.Snapshot(at(0)); s.InFlight != 0 || s.ScopeInFlight[0] != 0 || s.ScopeInFlight[1] != 0 || e.reqs.Len() != 0 {
			t.Fatalf("after both calls: %+v, %d requests", s, e.reqs.Len())
		}
		if st := e.SecondStats(); st.Fired != 1 || st.Won != 1 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("a model with one target hedges to the same one", func(t *testing.T) {
		e := hedgeEngine(1, 1)
		a, _ := e.Arrive(at(0), Request{Targets: []int{0}, HedgeAfter: time.Second})
		rd := e.Tick(at(time.Second))
		if len(rd.Second) != 1 || rd.Second[0].Target != 0 || rd.Second[0].ID != a.ID {
			t.Fatalf("hedge %+v, want the same target", rd.Second)
		}
	})
	t.Run("no hedge into a full scope", func(t *testing.T) {
		e := hedgeEngine(1, 2)
		e.scopes[1].limiter = admission.Fixed(1)
		e.adm = admission.NewCore(admission.Config{Global: admission.Fixed(100), Scopes: []admission.Limiter{admission.Fixed(10), admission.Fixed(1)}})
		e.Arrive(at(0), Request{Targets: []int{1}}) // fills scope 1
		e.Arrive(at(0), Request{Targets: []int{0, 1}, HedgeAfter: time.Second})
		rd := e.Tick(at(time.Second))
		// Scope 1 is full, so the hedge goes to the same target, 0.
		if len(rd.Second) != 1 || rd.Second[0].Target != 0 {
			t.Fatalf("hedge %+v, want target 0 (scope 1 is full)", rd.Second)
		}
	})
}

func TestRetry(t *testing.T) {
	newEngine := func(budget float64) *Engine {
		return New(Config{
			Admission: admission.Config{Global: admission.Fixed(100)},
			Scopes:    []ScopeConfig{{Fixed: 10}, {Fixed: 10}},
			Retry:     RetryConfig{Budget: budget, Burst: 1},
		})
	}
	two := Request{Targets: []int{0, 1}}
	t.Run("a safe failure is retried once on the next target", func(t *testing.T) {
		e := newEngine(1)
		a, _ := e.Arrive(at(0), two)
		ti, delay, ok := e.Retry(at(time.Second), a.ID, Outcome{Kind: Overloaded, Status: 503})
		if !ok || ti != 1 || delay != 0 {
			t.Fatalf("retry %d after %v, %v; want target 1 at once", ti, delay, ok)
		}
		if _, _, ok := e.Retry(at(time.Second), a.ID, Outcome{Kind: Overloaded, Status: 503}); ok {
			t.Fatal("a second retry: at most two calls per request")
		}
		e.Finish(at(time.Second), a.ID, Outcome{Kind: ConnError})
		e.Commit(at(2*time.Second), a.ID, 1)
		e.FinishSecond(at(2*time.Second), a.ID, Outcome{Kind: OK})
		if e.reqs.Len() != 0 || e.Snapshot(at(0)).InFlight != 0 {
			t.Fatal("the request did not complete")
		}
	})
	t.Run("not retried: a 4xx, a timeout, a cancel", func(t *testing.T) {
		e := newEngine(1)
		for _, o := range []Outcome{{Kind: Failed, Status: 400}, {Kind: TimedOut}, {Kind: Cancelled}} {
			a, _ := e.Arrive(at(0), two)
			if _, _, ok := e.Retry(at(0), a.ID, o); ok {
				t.Errorf("%+v was retried", o)
			}
		}
	})
	t.Run("the only target: the same provider, after a short Retry-After", func(t *testing.T) {
		e := newEngine(1)
		a, _ := e.Arrive(at(0), Request{Targets: []int{0}, Deadline: at(10 * time.Second)})
		ti, delay, ok := e.Retry(at(0), a.ID, Outcome{Kind: Overloaded, Status: 529, RetryAfter: 800 * time.Millisecond})
		if !ok || ti != 0 || delay != 800*time.Millisecond {
			t.Fatalf("retry %d after %v, %v; want the same target after its 800ms Retry-After", ti, delay, ok)
		}
	})
	t.Run("a Retry-After past the hold is never waited out", func(t *testing.T) {
		e := newEngine(1)
		a, _ := e.Arrive(at(0), Request{Targets: []int{0}, Deadline: at(60 * time.Second)})
		if ti, delay, ok := e.Retry(at(0), a.ID, Outcome{Kind: Overloaded, Status: 429, RetryAfter: 30 * time.Second}); ok {
			t.Fatalf("retry %d after %v: a slot held 30 s for a provider's Retry-After", ti, delay)
		}
	})
	t.Run("no Retry-After: full-jitter backoff within the base", func(t *testing.T) {
		e := newEngine(1)
		a, _ := e.Arrive(at(0), Request{Targets: []int{0}})
		_, delay, ok := e.Retry(at(0), a.ID, Outcome{Kind: ConnError})
		if !ok || delay < 0 || delay > 100*time.Millisecond {
			t.Fatalf("delay %v %v; want a jittered wait within the 100ms base", delay, ok)
		}
	})
	t.Run("no retry the deadline cannot fit", func(t *testing.T) {
		e := newEngine(1)
		a, _ := e.Arrive(at(0), Request{Targets: []int{0}, Deadline: at(time.Second)})
		if _, _, ok := e.Retry(at(0), a.ID, Outcome{Kind: Overloaded, Status: 429, RetryAfter: 5 * time.Second}); ok {
			t.Fatal("a retry after 5s for a request with 1s left")
		}
	})
	t.Run("the budget caps retries on the same provider", func(t *testing.T) {
		e := newEngine(0.1)
		retried := 0
		for range 20 {
			a, _ := e.Arrive(at(0), Request{Targets: []int{0}})
			if _, _, ok := e.Retry(at(0), a.ID, Outcome{Kind: ConnError}); ok {
				retried++
				e.End(at(0), a.ID, 0, Outcome{Kind: ConnError})
				e.End(at(0), a.ID, 1, Outcome{Kind: OK})
				continue
			}
			e.End(at(0), a.ID, 0, Outcome{Kind: ConnError})
		}
		// A burst of one plus 10% of 20 requests.
		if retried > 3 || e.SecondStats().RetryNoBudget == 0 {
			t.Errorf("retried %d of 20 at a 10%% budget; stats %+v", retried, e.SecondStats())
		}
	})
}
