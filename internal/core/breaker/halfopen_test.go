package breaker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestOpenToHalfOpen(t *testing.T) {
	b := tripped(t, Config{})
	if next, ok := b.NextTimer(); !ok || !next.Equal(at(DefaultOpenFor)) {
		t.Fatalf("NextTimer %v %v, want OpenFor after the trip", next.Sub(t0), ok)
	}
	if _, err := b.Allow(at(DefaultOpenFor - time.Nanosecond)); !errors.Is(err, ErrOpen) {
		t.Fatalf("Allow just before OpenFor: %v, want ErrOpen", err)
	}
	wantState(t, b, at(DefaultOpenFor-time.Nanosecond), Open, 0)
	// No Tick: Allow applies the due transition itself.
	tk, err := b.Allow(at(DefaultOpenFor))
	if err != nil || !tk.Probe() {
		t.Fatalf("Allow at OpenFor: %+v %v, want a probe", tk, err)
	}
	if got := trail(b.Transitions()); got != "open>half_open:open_elapsed" {
		t.Errorf("transitions %q", got)
	}
	wantState(t, b, at(DefaultOpenFor), HalfOpen, 0)
}

func TestHalfOpenAdmitsExactlyProbes(t *testing.T) {
	for _, n := range []int{1, 3, 5} {
		t.Run(string(rune('0'+n))+" probes", func(t *testing.T) {
			b, now := halfOpen(t, Config{Probes: n})
			var tks []Ticket
			for i := range n {
				tk, err := b.Allow(now)
				if err != nil || !tk.Probe() {
					t.Fatalf("probe %d: %v", i, err)
				}
				tks = append(tks, tk)
			}
			if _, err := b.Allow(now); !errors.Is(err, ErrOpen) {
				t.Fatalf("probe %d admitted", n+1)
			}
			if st := b.Stats(now); st.Probes != n {
				t.Errorf("Stats.Probes %d, want %d", st.Probes, n)
			}
			// A 429 or a cancellation proves nothing: it frees its slot.
			b.Done(now, tks[0], limited)
			tk, err := b.Allow(now)
			if err != nil {
				t.Fatalf("slot not freed by a 429: %v", err)
			}
			b.Done(now, tk, gone)
			if _, err := b.Allow(now); err != nil {
				t.Fatalf("slot not freed by a cancellation: %v", err)
			}
			if _, err := b.Allow(now); !errors.Is(err, ErrOpen) {
				t.Fatal("more than Probes probes in flight")
			}
		})
	}
}

func TestProbeVerdicts(t *testing.T) {
	const thr = 2 * time.Second // tripped's fixed slow threshold
	tests := []struct {
		name  string
		cfg   Config
		run   func(t *testing.T, b *Breaker, now time.Time, p []Ticket) time.Time
		trail string
		state State
	}{
		{
			name: "all probes fast: fail back at the first step",
			run: func(t *testing.T, b *Breaker, now time.Time, p []Ticket) time.Time {
				for _, tk := range p {
					b.Done(now.Add(time.Second), tk, fast)
				}
				return now.Add(time.Second)
			},
			trail: "half_open>recovering:probes_ok", state: Recovering,
		},
		{
			// ProbeTimeout is longer than the slow threshold here, so
			// the probe's own slowness is what fails it.
			name: "one probe ends slow",
			cfg:  Config{ProbeTimeout: time.Minute},
			run: func(t *testing.T, b *Breaker, now time.Time, p []Ticket) time.Time {
				b.Done(now, p[0], fast)
				b.Done(now.Add(thr+time.Millisecond), p[1], Outcome{Kind: OK, Latency: thr + time.Millisecond})
				return now.Add(thr + time.Millisecond)
			},
			trail: "half_open>open:probe_slow", state: Open,
		},
		{
			name: "one probe reported slow in flight",
			cfg:  Config{ProbeTimeout: time.Minute},
			run: func(t *testing.T, b *Breaker, now time.Time, p []Ticket) time.Time {
				b.Slow(now.Add(thr), p[2])
				return now.Add(thr)
			},
			trail: "half_open>open:probe_slow", state: Open,
		},
		{
			name: "one probe fails",
			run: func(t *testing.T, b *Breaker, now time.Time, p []Ticket) time.Time {
				b.Done(now, p[1], failed)
				return now
			},
			trail: "half_open>open:probe_error", state: Open,
		},
		{
			name: "a hanging probe times out at its slow threshold",
			run: func(t *testing.T, b *Breaker, now time.Time, p []Ticket) time.Time {
				b.Done(now, p[0], fast)
				b.Done(now, p[1], fast)
				next, ok := b.NextTimer()
				if !ok || !next.Equal(now.Add(thr)) {
					t.Fatalf("NextTimer %v, want the probe timeout %v", next.Sub(now), thr)
				}
				b.Tick(next.Add(-time.Nanosecond))
				wantState(t, b, next.Add(-time.Nanosecond), HalfOpen, 0)
				b.Tick(next)
				return next
			},
			trail: "half_open>open:probe_timeout", state: Open,
		},
		{
			name: "a hanging probe times out at ProbeTimeout",
			cfg:  Config{ProbeTimeout: 5 * time.Second},
			run: func(t *testing.T, b *Breaker, now time.Time, p []Ticket) time.Time {
				if next, _ := b.NextTimer(); !next.Equal(now.Add(5 * time.Second)) {
					t.Fatalf("NextTimer %v after HalfOpen, want 5s", next.Sub(now))
				}
				b.Tick(now.Add(5 * time.Second))
				return now.Add(5 * time.Second)
			},
			trail: "half_open>open:probe_timeout", state: Open,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, now := halfOpen(t, tc.cfg)
			var p []Ticket
			for range DefaultProbes {
				tk, err := b.Allow(now)
				if err != nil {
					t.Fatal(err)
				}
				p = append(p, tk)
			}
			end := tc.run(t, b, now, p)
			if got := trail(b.Transitions()); got != tc.trail {
				t.Errorf("transitions %q, want %q", got, tc.trail)
			}
			if s, _ := b.State(end); s != tc.state {
				t.Errorf("state %v, want %v", s, tc.state)
			}
			// Whatever the verdict, the remaining probes' Done is harmless.
			for _, tk := range p {
				b.Done(end, tk, failed)
			}
			if got := b.Transitions(); len(got) != 0 {
				t.Errorf("stale probes made transitions: %q", trail(got))
			}
		})
	}
}

// With no traffic, HalfOpen gives up at HalfOpenMaxWait and probes again
// after OpenFor, for ever: it never sticks.
func TestHalfOpenWithoutTrafficNeverSticks(t *testing.T) {
	b, now := halfOpen(t, Config{})
	start := now
	for cycle := range 5 {
		next, ok := b.NextTimer()
		if !ok || !next.Equal(now.Add(DefaultHalfOpenMaxWait)) {
			t.Fatalf("cycle %d: NextTimer %v, want HalfOpenMaxWait", cycle, next.Sub(now))
		}
		b.Tick(next)
		wantState(t, b, next, Open, 0)
		reopen, _ := b.NextTimer()
		if got := reopen.Sub(next); got != DefaultOpenFor {
			t.Fatalf("cycle %d: open for %v, want %v: a timeout is no evidence for backoff", cycle, got, DefaultOpenFor)
		}
		b.Tick(reopen)
		wantState(t, b, reopen, HalfOpen, 0)
		now = reopen
	}
	want := strings.TrimSpace(strings.Repeat("half_open>open:half_open_timeout open>half_open:open_elapsed ", 5))
	if got := trail(b.Transitions()); got != want {
		t.Errorf("transitions %q, want %q", got, want)
	}
	// And traffic, when it comes back, is probed at once.
	if tk, err := b.Allow(now); err != nil || !tk.Probe() {
		t.Errorf("Allow after %v of idle half-open cycles: %v", now.Sub(start), err)
	}
}

// A trickle probe that answers after another one has passed proves
// nothing more: fail-back, once started, does not restart from its first
// step.
func TestLateTrickleProbeDoesNotRestartFailBack(t *testing.T) {
	b := mustNew(t, Config{MinCalls: 2, Window: 10 * time.Second, SlowThreshold: time.Second,
		OpenFor: time.Second, Probes: 3, ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 30 * time.Second,
		StepHold: time.Second, Steps: []float64{0.1, 0.5}})
	calls(t, b, at(0), 2, failed) // trip
	wantState(t, b, at(time.Second), HalfOpen, 0)
	late, err := b.Allow(at(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	doCall(t, b, at(1100*time.Millisecond), fast) // the second probe passes first
	wantState(t, b, at(1100*time.Millisecond), Recovering, 0.1)
	calls(t, b, at(1200*time.Millisecond), 3, fast)
	b.Tick(at(2200 * time.Millisecond)) // held calm for a step
	if st, step := b.State(at(2200 * time.Millisecond)); st != Recovering || step != 1 {
		t.Fatalf("after a calm step: %v step %d, want recovering at step 1", st, step)
	}
	b.Done(at(2300*time.Millisecond), late, fast)
	if st, step := b.State(at(2300 * time.Millisecond)); st != Recovering || step != 1 {
		t.Fatalf("a late probe's answer moved the breaker to %v step %d", st, step)
	}
}
