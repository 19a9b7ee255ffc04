package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// A provider's Retry-After changes what later requests get only within
// bounds: a long one pauses the provider (failover or a fast refusal, no
// slot held), and the pause never outlasts open_for_max.
func TestProviderRetryAfter(t *testing.T) {
	newEngine := func(withBreaker bool) *Engine {
		scopes := []ScopeConfig{{Fixed: 1}, {Fixed: 10}}
		if withBreaker {
			b, err := breaker.New(breaker.Config{OpenFor: 5 * time.Second, OpenForMax: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			scopes[0].Breaker = b
		}
		return New(Config{
			Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 30 * time.Second},
			Scopes:    scopes,
			Retry:     RetryConfig{Budget: 1, Burst: 10},
		})
	}
	refuse30s := Outcome{Kind: Overloaded, Status: 429, RetryAfter: 30 * time.Second}
	two := Request{Targets: []int{0, 1}, Deadline: at(time.Minute)}
	sole := Request{Targets: []int{0}, Deadline: at(time.Minute)}

	t.Run("the refused request fails over at once, and so do later ones", func(t *testing.T) {
		e := newEngine(false)
		a, _ := e.Arrive(at(0), two)
		ti, delay, ok := e.Retry(at(0), a.ID, refuse30s)
		if !ok || ti != 1 || delay != 0 {
			t.Fatalf("retry %d after %v, %v; want the backup at once", ti, delay, ok)
		}
		e.Finish(at(0), a.ID, refuse30s)
		for _, d := range []time.Duration{time.Second, 29 * time.Second} {
			if b, _ := e.Arrive(at(d), two); b.Verdict != admission.Admitted || b.Target != 1 {
				t.Fatalf("at %v: arrival %+v, want routed past the paused provider", d, b)
			}
		}
		if c, _ := e.Arrive(at(30*time.Second), two); c.Target != 0 {
			t.Fatalf("after the Retry-After: routed to %d, want the primary again", c.Target)
		}
	})
	t.Run("with nowhere to go, later requests and waiters are refused fast", func(t *testing.T) {
		e := newEngine(false)
		a, _ := e.Arrive(at(0), sole)
		w, _ := e.Arrive(at(0), sole) // scope 0 holds one: this one waits
		if w.Verdict != admission.Queued {
			t.Fatalf("second arrival %+v, want queued", w)
		}
		if _, _, ok := e.Retry(at(0), a.ID, refuse30s); ok {
			t.Fatal("retried on a provider that asked for 30 s")
		}
		rd, _ := e.Finish(at(0), a.ID, refuse30s)
		if len(rd.Start) != 0 || len(rd.Refuse) != 1 || rd.Refuse[0].Ticket != w.ID || rd.Refuse[0].RetryAfter != 30*time.Second {
			t.Fatalf("Finish %+v; want the waiter refused with Retry-After 30s, not started on the paused provider", rd)
		}
		b, _ := e.Arrive(at(10*time.Second), sole)
		if b.Verdict != admission.Rejected || b.Refusal.Reason != admission.ReasonUnavailable || b.Refusal.RetryAfter != 20*time.Second {
			t.Fatalf("arrival during the pause %+v; want refused at once, back in 20 s", b)
		}
	})
	t.Run("the pause is bounded by open_for_max", func(t *testing.T) {
		e := newEngine(true)
		a, _ := e.Arrive(at(0), two)
		forever := Outcome{Kind: Overloaded, Status: 429, RetryAfter: 99999 * time.Second}
		e.Retry(at(0), a.ID, forever)
		e.Finish(at(0), a.ID, forever)
		if b, _ := e.Arrive(at(19*time.Second), two); b.Target != 1 {
			t.Fatalf("at 19 s routed to %d, want the backup", b.Target)
		}
		if c, _ := e.Arrive(at(20*time.Second), two); c.Target != 0 {
			t.Fatalf("at 20 s (open_for_max) routed to %d, want the primary again", c.Target)
		}
	})
	t.Run("a short Retry-After pauses nothing", func(t *testing.T) {
		e := newEngine(false)
		a, _ := e.Arrive(at(0), two)
		short := Outcome{Kind: Overloaded, Status: 429, RetryAfter: 500 * time.Millisecond}
		e.Retry(at(0), a.ID, short)
		e.Finish(at(0), a.ID, short)
		if b, _ := e.Arrive(at(0), two); b.Target != 0 {
			t.Fatalf("routed to %d after a 500ms Retry-After; want the primary", b.Target)
		}
	})
}

// A synthetic probe answered with a huge Retry-After waits at most
// open_for_max before the next.
func TestProbeRetryAfterIsBounded(t *testing.T) {
	b, err := breaker.New(breaker.Config{MinCalls: 1, OpenFor: time.Second, OpenForMax: 10 * time.Second, SlowThreshold: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := New(Config{Admission: admission.Config{Global: admission.Fixed(10)},
		Scopes: []ScopeConfig{{Breaker: b, SyntheticProbes: true}}})
	a, _ := e.Arrive(at(0), Request{Targets: []int{0}})
	e.Finish(at(0), a.ID, Outcome{Kind: ConnError}) // trips
	rd := e.Tick(at(time.Second))                   // half-open: a probe
	if len(rd.Probe) == 0 {
		t.Fatalf("no probe at half-open: %+v", rd)
	}
	e.FinishProbe(at(time.Second), rd.Probe[0].ID, Outcome{Kind: Overloaded, Status: 429, RetryAfter: 99999 * time.Second})
	next, ok := e.nextProbe()
	if !ok || next.After(at(11*time.Second)) {
		t.Fatalf("next probe at %v (%v); want within open_for_max (10 s) of the 429", next.Sub(at(0)), ok)
	}
}
