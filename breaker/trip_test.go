package breaker

import (
	"testing"
	"time"
)

func TestTrip(t *testing.T) {
	tests := []struct {
		name  string
		run   func(t *testing.T, b *Breaker)
		trail string // transitions, in order
		calls int    // window calls after run (when no trip reset matters)
	}{
		{
			name: "error rate trips at the threshold",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 10, fast)
				calls(t, b, t0, 10, failed)
			},
			trail: "closed>open:error_rate", calls: 20,
		},
		{
			name: "error rate just under the threshold",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 11, fast)
				calls(t, b, t0, 9, failed)
			},
			calls: 20,
		},
		{
			name:  "429s neither trip the error rate",
			run:   func(t *testing.T, b *Breaker) { calls(t, b, t0, 19, failed); calls(t, b, t0, 50, limited) },
			calls: 19,
		},
		{
			name: "nor dilute it",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 100, limited)
				calls(t, b, t0, 10, fast)
				calls(t, b, t0, 10, failed)
			},
			trail: "closed>open:error_rate", calls: 20,
		},
		{
			name:  "MinCalls gate: 19 slow calls in a quiet window",
			run:   func(t *testing.T, b *Breaker) { calls(t, b, t0, 19, slowOK) },
			calls: 19,
		},
		{
			name:  "the 20th slow call trips",
			run:   func(t *testing.T, b *Breaker) { calls(t, b, t0, 20, slowOK) },
			trail: "closed>open:slow_rate", calls: 20,
		},
		{
			name: "the error rate is checked first",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 10, slowOK)
				calls(t, b, t0, 10, failed)
			},
			trail: "closed>open:error_rate", calls: 20,
		},
		{
			name: "cancelled calls do not count",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 40, gone)
				calls(t, b, t0, 19, failed)
			},
			calls: 19,
		},
		{
			name: "old failures age out of the window",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 15, failed)
				calls(t, b, at(30*time.Second), 5, fast)
			},
			calls: 5,
		},
		{
			name: "failures still in the window trip",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 15, failed)
				calls(t, b, at(27*time.Second), 5, fast)
			},
			trail: "closed>open:error_rate", calls: 20,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, Config{SlowThreshold: 2 * time.Second})
			tc.run(t, b)
			if got := trail(b.Transitions()); got != tc.trail {
				t.Errorf("transitions %q, want %q", got, tc.trail)
			}
			if st := b.Stats(b.last); st.Calls != tc.calls {
				t.Errorf("window calls %d, want %d (%+v)", st.Calls, tc.calls, st)
			}
		})
	}
}

// A brownout's calls take long to finish; the breaker must trip on the
// in-flight flags, before any of them completes.
func TestSlowRateTripsInFlight(t *testing.T) {
	b := mustNew(t, Config{SlowThreshold: 2 * time.Second})
	calls(t, b, t0, 10, fast)
	var flight []Ticket
	for range 10 {
		tk, err := b.Allow(at(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if tk.SlowAfter() != 2*time.Second {
			t.Fatalf("SlowAfter %v, want 2s", tk.SlowAfter())
		}
		flight = append(flight, tk)
	}
	for i, tk := range flight {
		if !b.Slow(at(3*time.Second), tk) {
			t.Fatalf("Slow refused ticket %d", i)
		}
	}
	tr := b.Transitions()
	if trail(tr) != "closed>open:slow_rate" {
		t.Fatalf("transitions %q, want one slow_rate trip", trail(tr))
	}
	if got := tr[0]; got.Calls != 20 || got.SlowRate != 0.5 || got.ErrorRate != 0 || !got.At.Equal(at(3*time.Second)) {
		t.Errorf("trip evidence %+v, want 20 calls at 50%% slow at 3s", got)
	}
	if st := b.Stats(at(3 * time.Second)); st.InFlight != 10 || st.Trips != 1 {
		t.Errorf("stats %+v, want 10 still in flight and 1 trip", st)
	}
	for _, tk := range flight { // their completions change nothing
		if !b.Done(at(8*time.Second), tk, slowOK) {
			t.Fatal("Done refused an in-flight ticket")
		}
	}
	if b.Done(at(8*time.Second), flight[0], fast) {
		t.Error("a second Done was accepted")
	}
	if tr := b.Transitions(); len(tr) != 0 {
		t.Errorf("late completions made transitions: %q", trail(tr))
	}
}

// A call flagged slow counts once, as slow, whatever its Done says.
func TestSlowThenDone(t *testing.T) {
	tests := []struct {
		name string
		o    Outcome
	}{
		{"then OK", fast},
		{"then slow OK", slowOK},
		{"then Error", failed},
		{"then RateLimited", limited},
		{"then Cancelled", gone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, Config{SlowThreshold: 2 * time.Second})
			tk, _ := b.Allow(t0)
			if !b.Slow(at(3*time.Second), tk) || b.Slow(at(4*time.Second), tk) {
				t.Fatal("want the first Slow accepted and the second refused")
			}
			b.Done(at(5*time.Second), tk, tc.o)
			st := b.Stats(at(5 * time.Second))
			if st.Calls != 1 || st.Slow != 1 || st.Errors != 0 || st.RateLimited != 0 {
				t.Errorf("stats %+v, want exactly one call, slow", st)
			}
			if st.HealthySamples != 0 {
				t.Error("a slow call became a healthy latency")
			}
		})
	}
}

// Without a Slow report, Done classifies by Kind and Latency.
func TestDoneClassifies(t *testing.T) {
	tests := []struct {
		name                         string
		o                            Outcome
		calls, errors, slow, limited int
	}{
		{"fast OK", fast, 1, 0, 0, 0},
		{"OK over the threshold is slow", slowOK, 1, 0, 1, 0},
		{"OK at the threshold is not slow", Outcome{Kind: OK, Latency: 2 * time.Second}, 1, 0, 0, 0},
		{"slow Error counts as an error only", Outcome{Kind: Error, Latency: time.Minute}, 1, 1, 0, 0},
		{"429 is not a call", limited, 0, 0, 0, 1},
		{"Cancelled is nothing", gone, 0, 0, 0, 0},
		{"zero Latency means since Allow", Outcome{Kind: OK}, 1, 0, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, Config{SlowThreshold: 2 * time.Second})
			tk, _ := b.Allow(t0)
			b.Done(at(3*time.Second), tk, tc.o)
			st := b.Stats(at(3 * time.Second))
			if st.Calls != tc.calls || st.Errors != tc.errors || st.Slow != tc.slow || st.RateLimited != tc.limited {
				t.Errorf("stats %+v, want calls %d errors %d slow %d limited %d",
					st, tc.calls, tc.errors, tc.slow, tc.limited)
			}
		})
	}
}
