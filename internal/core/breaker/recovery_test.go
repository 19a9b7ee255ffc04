package breaker

import (
	"testing"
	"time"
)

// recovering returns a breaker whose probes have just all passed, at the
// returned time, with transitions drained.
func recovering(t testing.TB, cfg Config) (*Breaker, time.Time) {
	t.Helper()
	b, now := halfOpen(t, cfg)
	probes := cfg.Probes
	if probes == 0 {
		probes = DefaultProbes
	}
	calls(t, b, now, probes, fast)
	if s, _ := b.State(now); s != Recovering {
		t.Fatalf("setup: state %v, want recovering", s)
	}
	b.Transitions()
	return b, now
}

func TestFailBackLadder(t *testing.T) {
	b, now := recovering(t, Config{})
	wantState(t, b, now, Recovering, 0.10)
	// A call admitted at 10% and finished once Closed was not made at
	// full weight: it must not teach the slow threshold.
	early, _ := b.Allow(now)
	for i, want := range []float64{0.25, 0.50, 1} {
		// The step needs Probes calls before its hold can end.
		if _, ok := b.NextTimer(); ok {
			t.Fatalf("step %d: a timer before the step has its calls", i)
		}
		calls(t, b, now.Add(time.Second), DefaultProbes, fast)
		next, ok := b.NextTimer()
		if !ok || !next.Equal(now.Add(DefaultStepHold)) {
			t.Fatalf("step %d: NextTimer %v %v, want StepHold", i, next.Sub(now), ok)
		}
		b.Tick(next.Add(-time.Nanosecond))
		wantState(t, b, next.Add(-time.Nanosecond), Recovering, []float64{0.10, 0.25, 0.50}[i])
		b.Tick(next)
		now = next
		state := Recovering
		if want == 1 {
			state = Closed
		}
		wantState(t, b, now, state, want)
	}
	want := "recovering>recovering:step_up recovering>recovering:step_up recovering>closed:recovered"
	if got := trail(b.Transitions()); got != want {
		t.Errorf("transitions %q, want %q", got, want)
	}
	b.Done(now, early, fast)
	if st := b.Stats(now); st.ReTrips != 0 || st.Trips != 1 || st.HealthySamples != 0 {
		t.Errorf("stats %+v: want 1 trip, no re-trip, and no healthy sample from recovery", st)
	}
}

func TestFailBackStep(t *testing.T) {
	sec := func(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }
	type ev struct {
		at   time.Duration // after the probes passed
		n    int
		o    Outcome
		flag time.Duration // when set: the calls are flagged slow then instead
	}
	tests := []struct {
		name   string
		events []ev
		check  time.Duration // when to look
		weight float64
	}{
		{"no calls: the step holds", nil, sec(60), 0.10},
		{"two calls are too little evidence", []ev{{sec(1), 2, fast, 0}}, sec(60), 0.10},
		{"late evidence advances at once", []ev{{sec(15), 3, fast, 0}}, sec(15), 0.25},
		{"calm for StepHold advances", []ev{{sec(1), 3, fast, 0}}, sec(10), 0.25},
		// A call started at 5 s and flagged slow at 7.1 s makes 1 slow in
		// 4: over half the slow-rate threshold, so not calm. It is seen
		// at its flag (the hold restarts), again at the host's Tick at
		// 17.1 s (it is still among the starts judged, until 19 s), and
		// the hold then ends at 27.1 s.
		{"uneasy restarts the hold", []ev{{sec(1), 3, fast, 0}, {sec(5), 1, fast, sec(7.1)}}, sec(27), 0.10},
		{"then calm for a whole hold advances", []ev{{sec(1), 3, fast, 0}, {sec(5), 1, fast, sec(7.1)}}, sec(27.2), 0.25},
		// Errors at a quarter of the calls, likewise: seen at 2 s and at
		// the Tick at 12 s, gone from the window by 14 s, calm at 22 s.
		{"errors at half the threshold hold", []ev{{sec(1), 3, fast, 0}, {sec(2), 1, failed, 0}}, sec(21.9), 0.10},
		{"and then advance", []ev{{sec(1), 3, fast, 0}, {sec(2), 1, failed, 0}}, sec(22.1), 0.25},
		// 429s and cancellations are not evidence of health.
		{"429s are not evidence", []ev{{sec(1), 10, limited, 0}, {sec(1), 10, gone, 0}}, sec(60), 0.10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, start := recovering(t, Config{})
			for _, e := range tc.events {
				if e.flag > 0 {
					slowCalls(t, b, start.Add(e.at), start.Add(e.flag), e.n)
					continue
				}
				calls(t, b, start.Add(e.at), e.n, e.o)
			}
			// The host ticks at every NextTimer, then at the check.
			end := start.Add(tc.check)
			for next, ok := b.NextTimer(); ok && !next.After(end); next, ok = b.NextTimer() {
				b.Tick(next)
			}
			b.Tick(end)
			if w := b.Weight(start.Add(tc.check)); w != tc.weight {
				t.Errorf("weight %v at %v, want %v (%q)", w, tc.check, tc.weight, trail(b.Transitions()))
			}
		})
	}
}

// A trip during fail-back reopens, backs off, and starts the next
// fail-back from the first step.
func TestReTripRestartsFromFirstStep(t *testing.T) {
	b, now := recovering(t, Config{})
	calls(t, b, now.Add(time.Second), 3, fast)
	b.Tick(now.Add(DefaultStepHold))
	wantState(t, b, now.Add(DefaultStepHold), Recovering, 0.25)
	now = now.Add(DefaultStepHold + time.Second)
	// Seven calls flagged slow: with the step's 3 fast ones, MinCalls at 70% slow.
	slowCalls(t, b, now, now.Add(2100*time.Millisecond), 7)
	now = now.Add(2100 * time.Millisecond)
	wantState(t, b, now, Open, 0)
	st := b.Stats(now)
	if st.ReTrips != 1 || st.OpenFor != 2*DefaultOpenFor {
		t.Fatalf("stats %+v: want 1 re-trip and a doubled open time", st)
	}
	next, _ := b.NextTimer()
	if next.Sub(now) != 2*DefaultOpenFor {
		t.Fatalf("reopens after %v, want %v", next.Sub(now), 2*DefaultOpenFor)
	}
	calls(t, b, next, DefaultProbes, fast)
	wantState(t, b, next, Recovering, 0.10)
	want := "recovering>recovering:step_up recovering>open:slow_rate open>half_open:open_elapsed half_open>recovering:probes_ok"
	if got := trail(b.Transitions()); got != want {
		t.Errorf("transitions %q, want %q", got, want)
	}
}

// Consecutive failed recoveries double the open time up to OpenForMax;
// reaching Closed resets it.
func TestOpenBackoff(t *testing.T) {
	b, now := halfOpen(t, Config{ConsecutiveErrors: -1})
	var got []time.Duration
	for range 6 {
		calls(t, b, now, 1, failed) // probe_error
		next, _ := b.NextTimer()
		got = append(got, next.Sub(now))
		b.Tick(next)
		now = next
	}
	want := []time.Duration{20, 40, 80, 120, 120, 120}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("open times %v, want %v s", got, want)
		}
	}
	calls(t, b, now, DefaultProbes, fast)
	for range 3 {
		calls(t, b, now.Add(time.Second), DefaultProbes, fast)
		now = now.Add(DefaultStepHold)
		b.Tick(now)
	}
	wantState(t, b, now, Closed, 1)
	// The window still holds the last step's 3 fail-back calls: 7
	// errors make the 10 calls MinCalls needs.
	if n := untilOpen(t, b, now, failed, 20); n != 7 {
		t.Errorf("opened after %d errors, want 7", n)
	}
	if next, _ := b.NextTimer(); next.Sub(now) != DefaultOpenFor {
		t.Errorf("after recovery, open for %v, want %v", next.Sub(now), DefaultOpenFor)
	}
	if st := b.Stats(now); st.ProbeFailures != 6 || st.Trips != 2 {
		t.Errorf("stats %+v, want 6 probe failures and 2 trips", st)
	}
}
