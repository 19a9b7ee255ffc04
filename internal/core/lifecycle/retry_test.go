package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// retryEngine: two providers with default breakers (traffic probes) and
// the default retry budget, 10% with a burst of 10.
func retryEngine(t *testing.T, burst float64) *Engine {
	t.Helper()
	var scopes []ScopeConfig
	for range 2 {
		b, err := breaker.New(breaker.Config{})
		if err != nil {
			t.Fatal(err)
		}
		scopes = append(scopes, ScopeConfig{Fixed: 10, Breaker: b})
	}
	return New(Config{
		Admission: admission.Config{Global: admission.Fixed(100)},
		Scopes:    scopes,
		Retry:     RetryConfig{Budget: 0.1, Burst: burst},
	})
}

var (
	err500   = Outcome{Kind: Failed, Status: 500}
	err503   = Outcome{Kind: Overloaded, Status: 503}
	reset    = Outcome{Kind: ConnError}
	answered = Outcome{Kind: OK, Status: 200}
)

// TestRetryRules: each rule of Engine.RetryCall, on the first call's
// failure of a request with two targets and a minute to go.
func TestRetryRules(t *testing.T) {
	tests := []struct {
		name string
		// before: outcomes of earlier requests' only calls on provider 0.
		before []Outcome
		burst  float64
		o      Outcome
		target int
		why    RetryWhy
		delay  time.Duration // exact, or (for RetrySame) the backoff's bound
	}{
		{"a lone 500 stays on its target", nil, 10, err500, 0, RetrySame, 100 * time.Millisecond},
		{"a lone reset stays on its target", nil, 10, reset, 0, RetrySame, 100 * time.Millisecond},
		{"a 500 after an error moves on", []Outcome{err500}, 10, err500, 1, RetryNext, 0},
		{"a 500 after a recovery stays", []Outcome{err500, answered}, 10, err500, 0, RetrySame, 100 * time.Millisecond},
		{"a 503 says capacity: next target", nil, 10, err503, 1, RetryNext, 0},
		{"a 529 too", nil, 10, Outcome{Kind: Overloaded, Status: 529}, 1, RetryNext, 0},
		{"a short Retry-After is waited out", nil, 10, Outcome{Kind: Overloaded, Status: 429, RetryAfter: 2 * time.Second}, 0, RetryWait, 2 * time.Second},
		{"a 503 with a short Retry-After too", nil, 10, Outcome{Kind: Overloaded, Status: 503, RetryAfter: time.Second}, 0, RetryWait, time.Second},
		{"a long Retry-After moves on at once", nil, 10, Outcome{Kind: Overloaded, Status: 429, RetryAfter: 5 * time.Second}, 1, RetryNext, 0},
		{"no budget: the lone 500 moves on, free", nil, 0.5, err500, 1, RetryNext, 0},
		{"no budget: the short Retry-After moves on", nil, 0.5, Outcome{Kind: Overloaded, Status: 429, RetryAfter: time.Second}, 1, RetryNext, 0},
		{"an invalid answer moves on", nil, 10, Outcome{Kind: OK, Status: 200, Invalid: true}, 1, RetryNext, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := retryEngine(t, tc.burst)
			now := at(0)
			for _, o := range tc.before {
				a, _ := e.Arrive(now, Request{Targets: []int{0}})
				e.End(now, a.ID, 0, o)
				now = now.Add(time.Second)
			}
			a, _ := e.Arrive(now, Request{Targets: []int{0, 1}, Deadline: now.Add(time.Minute)})
			c, ok := e.RetryCall(now, a.ID, tc.o)
			if !ok {
				t.Fatal("no retry")
			}
			if c.Target != tc.target || c.Why != tc.why {
				t.Fatalf("retry %+v, want target %d (%v)", c, tc.target, tc.why)
			}
			if tc.why == RetrySame && (c.Delay < 0 || c.Delay > tc.delay) || tc.why != RetrySame && c.Delay != tc.delay {
				t.Errorf("delay %v, want %v", c.Delay, tc.delay)
			}
		})
	}
}

// A short Retry-After the deadline cannot fit moves on at once.
func TestRetryAfterPastDeadline(t *testing.T) {
	e := retryEngine(t, 10)
	a, _ := e.Arrive(at(0), Request{Targets: []int{0, 1}, Deadline: at(time.Second)})
	c, ok := e.RetryCall(at(0), a.ID, Outcome{Kind: Overloaded, Status: 429, RetryAfter: 2 * time.Second})
	if !ok || c.Target != 1 || c.Why != RetryNext || c.Delay != 0 {
		t.Fatalf("retry %+v %v, want the next target at once", c, ok)
	}
}

// The WaitMax bound is configurable.
func TestRetryWaitMax(t *testing.T) {
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100)},
		Scopes:    []ScopeConfig{{Fixed: 10}, {Fixed: 10}},
		Retry:     RetryConfig{Budget: 0.1, Burst: 10, WaitMax: 500 * time.Millisecond},
	})
	a, _ := e.Arrive(at(0), Request{Targets: []int{0, 1}})
	if c, _ := e.RetryCall(at(0), a.ID, Outcome{Kind: Overloaded, Status: 429, RetryAfter: time.Second}); c.Why != RetryNext {
		t.Fatalf("retry %+v: a 1s Retry-After past a 500ms bound was waited out", c)
	}
}

// A same-target retry that fails too moves the request to its next
// target: three calls, and the client gets the fallback's answer.
func TestRetrySameThenNext(t *testing.T) {
	e := retryEngine(t, 10)
	a, _ := e.Arrive(at(0), Request{Targets: []int{0, 1}, Deadline: at(time.Minute)})
	c, ok := e.RetryCall(at(0), a.ID, err500)
	if !ok || c.Why != RetrySame || c.Target != 0 {
		t.Fatalf("first retry %+v %v", c, ok)
	}
	e.End(at(0), a.ID, 0, err500)
	now := at(0).Add(c.Delay)
	c, ok = e.RetryCall(now, a.ID, err500)
	if !ok || c.Why != RetryNext || c.Target != 1 || c.Delay != 0 {
		t.Fatalf("after the same-target retry failed: %+v %v, want the next target at once", c, ok)
	}
	e.End(now, a.ID, 1, err500) // the failed same-target call
	if _, ok := e.RetryCall(now, a.ID, err500); ok {
		t.Fatal("a fourth call")
	}
	if !e.Commit(now, a.ID, 1) {
		t.Fatal("the fallback's answer was not committed")
	}
	e.End(now, a.ID, 1, answered)
	if e.reqs.Len() != 0 || e.Snapshot(now).InFlight != 0 {
		t.Fatal("the request did not complete")
	}
	if s, _ := e.scopes[0].cfg.Breaker.State(now); s != breaker.Closed || e.scopes[0].cfg.Breaker.ErrorRun() != 2 {
		t.Fatalf("provider 0's breaker heard %d errors in a row (%v), want 2", e.scopes[0].cfg.Breaker.ErrorRun(), s)
	}
	if st := e.adm.Snapshot(now); st.InFlight != 0 {
		t.Fatalf("slots left held: %+v", st)
	}
}

// Failovers cost the failing provider's retry budget nothing: with a
// burst of one, 20 failovers in a row all go through, and the budget is
// still there for a same-target retry. (A 503 is a capacity refusal, so
// it is never retried on its own target.)
func TestFailoverIsFree(t *testing.T) {
	// No breakers: the primary takes every request first.
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100)},
		Scopes:    []ScopeConfig{{Fixed: 10}, {Fixed: 10}},
		Retry:     RetryConfig{Budget: 0.1, Burst: 1},
	})
	for i := range 20 {
		now := at(time.Duration(i) * time.Second)
		a, _ := e.Arrive(now, Request{Targets: []int{0, 1}})
		c, ok := e.RetryCall(now, a.ID, err503)
		if !ok || c.Why != RetryNext {
			t.Fatalf("request %d: %+v %v, want a failover", i, c, ok)
		}
		e.End(now, a.ID, 0, err503)
		e.Commit(now, a.ID, 1)
		e.End(now, a.ID, 1, answered)
	}
	if !e.retries[0].has() {
		t.Fatalf("provider 0's retry budget %v: failovers were charged to it", e.retries[0].tokens)
	}
	if st := e.SecondStats(); st.RetryNoBudget != 0 || st.Retries != 20 {
		t.Fatalf("stats %+v", st)
	}
}

// Ten tenths make a whole retry, although they add up to 0.9999999.
func TestRetryBudgetTenths(t *testing.T) {
	b := newBudget(HedgeConfig{Budget: 0.1, Burst: 10})
	b.tokens = 0
	for range 10 {
		b.earn()
	}
	if b.tokens >= 1 {
		t.Skip("float sums exactly here")
	}
	if !b.has() {
		t.Fatalf("ten tenths (%v) hold no call", b.tokens)
	}
}

// Issue 21's single-request case: 15 requests 4 s apart into a primary
// that is down hard, with a healthy fallback. Every client gets the
// fallback's answer; the primary's breaker trips on its run of errors,
// long before its window could (10 calls in 12 s), and the primary sees
// no more than the run plus its probes.
func TestLowTrafficHardDown(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail Outcome
	}{{"503", err503}, {"500", err500}, {"reset", reset}} {
		t.Run(tc.name, func(t *testing.T) {
			e := retryEngine(t, 10)
			primary, errs := 0, 0
			var tripped time.Duration
			for i := range 15 {
				now := at(time.Duration(i) * 4 * time.Second)
				e.Tick(now)
				a, _ := e.Arrive(now, Request{Targets: []int{0, 1}, Deadline: now.Add(time.Minute)})
				if a.Verdict != admission.Admitted {
					t.Fatalf("request %d: %+v", i, a)
				}
				target, attempt := a.Target, 0
				for calls := 0; ; calls++ {
					if calls > 2 {
						t.Fatalf("request %d: more than three calls", i)
					}
					if target == 1 {
						e.Commit(now, a.ID, attempt)
						e.End(now, a.ID, attempt, answered)
						break
					}
					primary++
					c, ok := e.RetryCall(now, a.ID, tc.fail)
					e.End(now, a.ID, attempt, tc.fail)
					if !ok {
						errs++
						break
					}
					now = now.Add(c.Delay)
					target, attempt = c.Target, 1
				}
				if s, _ := e.scopes[0].cfg.Breaker.State(now); s == breaker.Open && tripped == 0 {
					tripped = now.Sub(at(0))
				}
			}
			if errs != 0 {
				t.Errorf("%d primary errors reached clients", errs)
			}
			if tripped == 0 || tripped > 20*time.Second {
				t.Errorf("breaker tripped at %v, want within 20 s", tripped)
			}
			// The run of five, then one traffic probe per open period.
			if primary > breaker.DefaultConsecutiveErrors+3 {
				t.Errorf("primary saw %d calls", primary)
			}
			t.Logf("%s: primary %d calls, tripped at %v", tc.name, primary, tripped)
		})
	}
}

// A provider out on a run of errors is out for errors: a request with
// time to spare is not sent through to it as it would be to a provider
// out for slowness (reach.go).
func TestRunTripIsNotSlowness(t *testing.T) {
	e := retryEngine(t, 10)
	now := at(0)
	for range breaker.DefaultConsecutiveErrors {
		a, _ := e.Arrive(now, Request{Targets: []int{0}})
		e.End(now, a.ID, 0, err500)
		now = now.Add(4 * time.Second)
	}
	if s, _ := e.scopes[0].cfg.Breaker.State(now); s != breaker.Open {
		t.Fatalf("breaker %v after a run of errors", s)
	}
	if e.scopes[0].outForSlowness {
		t.Fatal("a run of errors counted as slowness")
	}
	a, _ := e.Arrive(now, Request{Targets: []int{0}, Deadline: now.Add(time.Hour)})
	if a.Verdict == admission.Admitted {
		t.Fatalf("a request was sent to a provider out on errors: %+v", a)
	}
}
