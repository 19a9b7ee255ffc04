package admission

import (
	"testing"
	"time"
)

// calls drives a Core on a virtual clock: every admitted call takes
// took(ticket), and run releases calls in the order they end.
type calls struct {
	c       *Core
	took    func(Ticket) time.Duration
	ends    map[Ticket]time.Time
	started map[Ticket]time.Time
}

func newCalls(c *Core, took func(Ticket) time.Duration) *calls {
	return &calls{c: c, took: took, ends: map[Ticket]time.Time{}, started: map[Ticket]time.Time{}}
}

func (s *calls) begin(at time.Time, t Ticket) {
	s.started[t], s.ends[t] = at, at.Add(s.took(t))
}

// admit offers one request at at; it reports the ticket and whether it
// was refused.
func (s *calls) admit(at time.Time) (Ticket, bool) {
	res := s.c.Admit(at, Request{Priority: Interactive, Scope: NoScope})
	if res.Verdict == Admitted {
		s.begin(at, res.Ticket)
	}
	return res.Ticket, res.Verdict == Rejected
}

// run releases every call that ends by to, in order, starting the
// waiters each release grants. It is bounded by the calls it holds.
func (s *calls) run(to time.Time) {
	for range 100_000 {
		var next Ticket
		var at time.Time
		for t, e := range s.ends {
			if next == 0 || e.Before(at) || (e.Equal(at) && t < next) {
				next, at = t, e
			}
		}
		if next == 0 || at.After(to) {
			return
		}
		delete(s.ends, next)
		granted, _ := s.c.Release(at, next)
		for _, g := range granted {
			s.begin(at, g)
		}
	}
}

// within reports whether got is within a factor f of want.
func within(got, want time.Duration, f float64) bool {
	return float64(got) >= float64(want)/f && float64(got) <= float64(want)*f
}

// A burst finds 50 slots and 250 waiters. The drain hint asked at any
// moment of it, from the first completions on, is within 2x of when a
// newcomer would really start (here: when the burst's last waiter does,
// one slot sooner than a newcomer). Before, the first few completions
// over the burst's busy slot-seconds read as a drain up to 25x slower
// than it was, and a quiet minute's prior did the same later in the
// burst.
func TestDrainHintDuringABurst(t *testing.T) {
	const slots, burst = 50, 300
	// Calls take 0.5 s to 1.5 s, a tenth of a second apart by ticket.
	took := func(t Ticket) time.Duration { return 500*time.Millisecond + time.Duration(t%11)*100*time.Millisecond }
	for _, tc := range []struct {
		name  string
		quiet bool // a busy spell and a quiet minute before the burst
		asks  []time.Duration
	}{
		{"the first burst", false, []time.Duration{550 * time.Millisecond, 700 * time.Millisecond, 900 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 4500 * time.Millisecond}},
		{"a burst after a quiet minute", true, []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond, 900 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 4500 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCore(Config{Global: Fixed(slots), MaxDepth: burst, MaxWait: 2 * time.Minute})
			s := newCalls(c, took)
			start := t0
			if tc.quiet {
				for i := range 200 {
					s.admit(t0.Add(time.Duration(i) * 50 * time.Millisecond))
					s.run(t0.Add(time.Duration(i) * 50 * time.Millisecond))
				}
				start = t0.Add(time.Minute + 10*time.Second)
				s.run(start)
			}
			var last Ticket
			for range burst {
				last, _ = s.admit(start)
			}
			// The truth: when the burst's last waiter starts.
			truth := newCalls(NewCore(Config{Global: Fixed(slots), MaxDepth: burst, MaxWait: 2 * time.Minute}), took)
			for range last - burst {
				// The same tickets, so the same calls' lengths.
				tk, _ := truth.admit(t0.Add(-time.Hour))
				truth.c.Release(t0.Add(-time.Hour), tk)
				delete(truth.ends, tk)
			}
			for range burst {
				truth.admit(t0)
			}
			var lastStart time.Duration
			for range burst {
				truth.run(t0.Add(time.Hour))
				if at, ok := truth.started[last]; ok {
					lastStart = at.Sub(t0)
					break
				}
			}
			if lastStart == 0 {
				t.Fatal("the burst's last waiter never started")
			}
			for _, ask := range tc.asks {
				s.run(start.Add(ask))
				real := lastStart - ask
				got := c.DrainTime(start.Add(ask), Interactive)
				t.Logf("%v into the burst: hint %v, a newcomer starts in %v", ask, got, real)
				if !within(got, real, 2) {
					t.Errorf("%v into the burst: DrainTime %v; a newcomer starts in %v", ask, got, real)
				}
			}
		})
	}
}

// Every slot is held by calls far longer than any seen: a newcomer is
// told about as long as the calls have left, not the last fast spell's
// figure (half a second to 1.35 s, before).
func TestDrainHintWhileLongCallsHoldEverySlot(t *testing.T) {
	const slots, long = 8, 60 * time.Second
	c := NewCore(Config{Global: Fixed(slots), MaxDepth: 0, MaxWait: 10 * time.Second})
	// A busy spell of 1 s calls, then every slot takes a 60 s call.
	fast := true
	s := newCalls(c, func(Ticket) time.Duration {
		if fast {
			return time.Second
		}
		return long
	})
	for i := range 100 {
		at := t0.Add(time.Duration(i) * 125 * time.Millisecond)
		s.run(at)
		s.admit(at)
	}
	begin := t0.Add(20 * time.Second)
	s.run(begin)
	fast = false
	for range slots {
		if _, refused := s.admit(begin); refused {
			t.Fatal("a slot was not free")
		}
	}
	if _, refused := s.admit(begin); !refused {
		t.Fatal("the newcomer was not refused")
	}
	// The first round: the calls have outlived everything seen, so only
	// their age says anything; from a third of their length on, the hint
	// is within 2x of what they have left.
	for _, age := range []time.Duration{20 * time.Second, 30 * time.Second, 40 * time.Second} {
		got := c.DrainTime(begin.Add(age), Interactive)
		if left := long - age; !within(got, left, 2) {
			t.Errorf("first round, %v in: hint %v, the calls have %v left", age, got, left)
		}
	}
	// The second round: 60 s calls have been seen, and the hint follows
	// what the calls in flight have left all the way.
	second := begin.Add(long)
	s.run(second)
	for range slots {
		s.admit(second)
	}
	for _, age := range []time.Duration{5 * time.Second, 20 * time.Second, 40 * time.Second, 55 * time.Second} {
		got := c.DrainTime(second.Add(age), Interactive)
		if left := long - age; !within(got, left, 2) {
			t.Errorf("second round, %v in: hint %v, the calls have %v left", age, got, left)
		}
	}
	for range 200 {
		if ra := c.RetryAfter(second.Add(5*time.Second), Interactive); ra < 10*time.Second {
			t.Fatalf("Retry-After %v with every slot held for 55 s more", ra)
		}
	}
}

// TestUnhintedRefusalsCarryNoRetryAfter: with Unhinted a refusal is the
// same refusal, without the Retry-After no client would read; without
// it, every refusal has one.
func TestUnhintedRefusalsCarryNoRetryAfter(t *testing.T) {
	for _, unhinted := range []bool{false, true} {
		c := NewCore(Config{Global: Fixed(1), MaxDepth: 0, Unhinted: unhinted})
		if res := c.Admit(t0, Request{Priority: Interactive, Scope: NoScope}); res.Verdict != Admitted {
			t.Fatalf("unhinted %v: the first request was %v, want admitted", unhinted, res.Verdict)
		}
		res := c.Admit(t0, Request{Priority: Interactive, Scope: NoScope})
		if res.Verdict != Rejected {
			t.Fatalf("unhinted %v: with the one slot held and no queue, got %v, want rejected", unhinted, res.Verdict)
		}
		if got := res.Refusal.RetryAfter; (got == 0) != unhinted {
			t.Errorf("unhinted %v: Retry-After %v", unhinted, got)
		}
	}
}
