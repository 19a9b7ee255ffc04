package breaker

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// t0 is an arbitrary virtual epoch; no test reads the wall clock.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func mustNew(t testing.TB, cfg Config) *Breaker {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	fast    = Outcome{Kind: OK, Latency: 200 * time.Millisecond}
	slowOK  = Outcome{Kind: OK, Latency: 20 * time.Second}
	failed  = Outcome{Kind: Error, Latency: 50 * time.Millisecond}
	limited = Outcome{Kind: RateLimited, Latency: 10 * time.Millisecond}
	gone    = Outcome{Kind: Cancelled, Latency: time.Second}
)

// doCall admits one call at now and reports it Done with o at once.
func doCall(t testing.TB, b *Breaker, now time.Time, o Outcome) {
	t.Helper()
	tk, err := b.Allow(now)
	if err != nil {
		t.Fatalf("Allow(%v) = %v, want a ticket", now.Sub(t0), err)
	}
	if !b.Done(now, tk, o) {
		t.Fatalf("Done(%v) refused a fresh ticket", now.Sub(t0))
	}
}

func calls(t testing.TB, b *Breaker, now time.Time, n int, o Outcome) {
	t.Helper()
	for range n {
		doCall(t, b, now, o)
	}
}

// slowCalls admits n calls at start and reports each Slow at flag, as
// the host does when a call passes its slow threshold in flight.
func slowCalls(t testing.TB, b *Breaker, start, flag time.Time, n int) {
	t.Helper()
	tks := make([]Ticket, n)
	for i := range tks {
		tk, err := b.Allow(start)
		if err != nil {
			t.Fatalf("Allow(%v) = %v, want a ticket", start.Sub(t0), err)
		}
		tks[i] = tk
	}
	for _, tk := range tks {
		b.Slow(flag, tk)
	}
}

// trail renders transitions as "from>to:reason" for compact comparison.
func trail(ts []Transition) string {
	parts := make([]string, len(ts))
	for i, tr := range ts {
		parts[i] = fmt.Sprintf("%s>%s:%s", tr.From, tr.To, tr.Reason)
	}
	return strings.Join(parts, " ")
}

func wantState(t testing.TB, b *Breaker, now time.Time, want State, wantWeight float64) {
	t.Helper()
	if s, _ := b.State(now); s != want {
		t.Fatalf("at %v: state %v, want %v", now.Sub(t0), s, want)
	}
	if w := b.Weight(now); w != wantWeight {
		t.Fatalf("at %v: weight %v, want %v", now.Sub(t0), w, wantWeight)
	}
}

// tripped returns a breaker with a fixed 2s slow threshold, opened by
// errors at t0 (MinCalls calls, all errors), its transitions drained.
func tripped(t testing.TB, cfg Config) *Breaker {
	t.Helper()
	if cfg.SlowThreshold == 0 {
		cfg.SlowThreshold = 2 * time.Second
	}
	b := mustNew(t, cfg)
	untilOpen(t, b, t0, failed, 100)
	if s, _ := b.State(t0); s != Open {
		t.Fatalf("setup: state %v, want open", s)
	}
	b.Transitions()
	return b
}

// halfOpen returns tripped(cfg) ticked into HalfOpen at the returned time.
func halfOpen(t testing.TB, cfg Config) (*Breaker, time.Time) {
	t.Helper()
	b := tripped(t, cfg)
	next, ok := b.NextTimer()
	if !ok {
		t.Fatal("setup: open breaker has no timer")
	}
	b.Tick(next)
	if s, _ := b.State(next); s != HalfOpen {
		t.Fatalf("setup: state %v, want half_open", s)
	}
	b.Transitions()
	return b, next
}

// untilOpen feeds calls with outcome o at now until the breaker opens,
// and returns how many it took (failing after limit).
func untilOpen(t testing.TB, b *Breaker, now time.Time, o Outcome, limit int) int {
	t.Helper()
	for n := 1; n <= limit; n++ {
		doCall(t, b, now, o)
		if s, _ := b.State(now); s == Open {
			return n
		}
	}
	t.Fatalf("still not open after %d calls", limit)
	return 0
}
