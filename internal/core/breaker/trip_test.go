package breaker

import (
	"fmt"
	"testing"
	"time"
)

func TestTrip(t *testing.T) {
	flag := at(3 * time.Second) // a slow threshold past t0
	tests := []struct {
		name  string
		run   func(t *testing.T, b *Breaker)
		trail string // transitions, in order
		calls int    // calls started in the last window, after run
	}{
		{
			name: "error rate trips at the threshold",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 40, fast)
				calls(t, b, t0, 10, failed)
			},
			trail: "closed>open:error_rate", calls: 50,
		},
		{
			name: "error rate just under the threshold",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 41, fast)
				calls(t, b, t0, 9, failed)
			},
			calls: 50,
		},
		{
			name:  "429s neither trip the error rate",
			run:   func(t *testing.T, b *Breaker) { calls(t, b, t0, 9, failed); calls(t, b, t0, 50, limited) },
			calls: 9,
		},
		{
			name: "nor dilute it",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 100, limited)
				calls(t, b, t0, 40, fast)
				calls(t, b, t0, 10, failed)
			},
			trail: "closed>open:error_rate", calls: 50,
		},
		{
			name:  "MinCalls gate: 9 slow calls in a quiet window",
			run:   func(t *testing.T, b *Breaker) { slowCalls(t, b, t0, flag, 9) },
			calls: 9,
		},
		{
			name:  "the 10th slow call trips",
			run:   func(t *testing.T, b *Breaker) { slowCalls(t, b, t0, flag, 10) },
			trail: "closed>open:slow_rate", calls: 10,
		},
		{
			name: "slow calls started less than a threshold ago are not judged yet",
			run: func(t *testing.T, b *Breaker) {
				// Known slow, but started 1 s ago: the calls started beside
				// them may still answer fast, so they wait for the edge.
				tks := make([]Ticket, 10)
				for i := range tks {
					tks[i], _ = b.Allow(at(2 * time.Second))
				}
				for _, tk := range tks {
					b.Done(at(3*time.Second), tk, slowOK)
				}
			},
			calls: 10,
		},
		{
			name: "the error rate is checked first",
			run: func(t *testing.T, b *Breaker) {
				tk, _ := b.Allow(t0)
				calls(t, b, t0, 9, failed)
				b.Slow(flag, tk) // now both rates are over: 9 errors and 1 slow of 10
			},
			trail: "closed>open:error_rate", calls: 10,
		},
		{
			name: "cancelled calls do not count",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 40, gone)
				calls(t, b, t0, 9, failed)
			},
			calls: 9,
		},
		{
			name: "old failures age out of the window",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 9, failed)
				calls(t, b, at(13*time.Second), 5, fast)
			},
			calls: 5,
		},
		{
			name: "failures still in the window trip",
			run: func(t *testing.T, b *Breaker) {
				calls(t, b, t0, 9, failed)
				calls(t, b, at(11*time.Second), 1, failed)
			},
			trail: "closed>open:error_rate", calls: 10,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, Config{SlowThreshold: 2 * time.Second, ConsecutiveErrors: -1})
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

// What the defaults promise, at any rate of traffic: a provider slow for
// every call trips about Window × SlowRate (2.4 s) of start times after
// it turned, whatever the rate, and a spike shorter than that never
// trips, however many calls it catches.
func TestTripOnEvidenceNotRate(t *testing.T) {
	const thr = 2 * time.Second
	// run sends rps calls a second for 40 s; calls started in
	// [slowFrom, slowTo) take 30 s (flagged at start+thr), the rest answer
	// in 1 s. It returns when the breaker opened (0: never).
	run := func(rps float64, slowFrom, slowTo time.Duration) time.Duration {
		b := mustNew(t, Config{SlowThreshold: thr})
		type pending struct {
			at   time.Duration
			tk   Ticket
			slow bool
		}
		// Two queues, each due in start order: the slow calls' flags and
		// the fast calls' answers.
		var queues [2][]pending
		step := time.Duration(float64(time.Second) / rps)
		for now := time.Duration(0); now < 40*time.Second; now += step {
			// Settle what is due by now, in time order.
			for {
				q := -1
				for i := range queues {
					if len(queues[i]) > 0 && queues[i][0].at <= now && (q < 0 || queues[i][0].at < queues[q][0].at) {
						q = i
					}
				}
				if q < 0 {
					break
				}
				p := queues[q][0]
				queues[q] = queues[q][1:]
				if p.slow {
					b.Slow(at(p.at), p.tk)
				} else {
					b.Done(at(p.at), p.tk, Outcome{Kind: OK, Latency: time.Second})
				}
				if s, _ := b.State(at(p.at)); s == Open {
					return p.at
				}
			}
			tk, err := b.Allow(at(now))
			if err != nil {
				return now
			}
			if now >= slowFrom && now < slowTo {
				queues[0] = append(queues[0], pending{at: now + thr + time.Nanosecond, tk: tk, slow: true})
			} else {
				queues[1] = append(queues[1], pending{at: now + time.Second, tk: tk})
			}
		}
		return 0
	}
	for _, rps := range []float64{2, 20, 200, 2000} {
		t.Run(fmt.Sprint(rps, " req/s"), func(t *testing.T) {
			if rps == 2000 && testing.Short() {
				t.Skip("long")
			}
			// A brownout from 15 s: trips about 2.4 s of starts later,
			// plus the threshold, plus at 2 req/s the wait for MinCalls.
			opened := run(rps, 15*time.Second, time.Hour)
			lo, hi := 15*time.Second+thr+2*time.Second, 15*time.Second+thr+3*time.Second
			if rps == 2 {
				hi = 15*time.Second + thr + 5*time.Second
			}
			if opened < lo || opened > hi {
				t.Errorf("a brownout from 15 s opened the breaker at %v; want within [%v, %v]", opened, lo, hi)
			}
			// A 2 s spike never trips.
			if opened := run(rps, 15*time.Second, 17*time.Second); opened != 0 {
				t.Errorf("a 2 s spike opened the breaker at %v", opened)
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
	// The third flag makes 3 slow of 13 calls: past 20%.
	if got := tr[0]; got.Calls != 13 || got.SlowRate != 3.0/13 || got.ErrorRate != 0 || !got.At.Equal(at(3*time.Second)) {
		t.Errorf("trip evidence %+v, want 13 calls at 3/13 slow at 3s", got)
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

// A timeout short of the slow threshold is a deadline the client chose:
// a client that asks for a millisecond, call after call, trips nothing.
// A timeout past the threshold is slow.
func TestTimeoutsJudgedByTheirAge(t *testing.T) {
	b := mustNew(t, Config{SlowThreshold: 2 * time.Second})
	for i := range 100 {
		calls(t, b, at(time.Duration(i)*100*time.Millisecond), 1, Outcome{Kind: TimedOut, Latency: time.Millisecond})
	}
	if st, _ := b.State(at(30 * time.Second)); st != Closed {
		t.Fatalf("after 100 calls the client timed out at 1 ms: %v, want closed", st)
	}
	for i := range 100 {
		now := at(30*time.Second + time.Duration(i)*100*time.Millisecond)
		tk, err := b.Allow(now)
		if err != nil {
			return // tripped
		}
		b.Done(now, tk, Outcome{Kind: TimedOut, Latency: 2 * time.Second})
	}
	t.Fatal("100 calls timed out at the slow threshold did not trip it")
}

// TestZeroNowIsNoTime: a host that asks before its clock has started
// (a zero now) does not start the breaker's clock. Were the window's
// origin put in year 1, every later call would fall in one bucket and
// the window would never forget: calls a whole Window old would still
// count.
func TestZeroNowIsNoTime(t *testing.T) {
	b := mustNew(t, Config{Window: 10 * time.Second, MinCalls: 10, ErrorRate: 0.5})
	if st, _ := b.State(time.Time{}); st != Closed {
		t.Fatalf("State(zero) = %v, want Closed", st)
	}
	calls(t, b, at(0), 4, failed)
	calls(t, b, at(30*time.Second), 6, fast)
	if s := b.Stats(at(30 * time.Second)); s.Calls != 6 || s.Errors != 0 {
		t.Fatalf("a Window after the errors, the window holds %d calls, %d errors; want the 6 recent ones and no error", s.Calls, s.Errors)
	}
}
