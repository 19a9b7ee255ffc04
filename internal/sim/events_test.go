package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestEventQueueOrder drives the event queue as the loop does (pops in
// time order, pushes at or after the clock, some far ahead, some at the
// very instant, some before the slot being run) and checks that it pops
// exactly what a sorted list of the same events would. Pushes may also
// come between its pops, from the loop's other sources.
func TestEventQueueOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		tick time.Duration // events land on multiples of it (0: any ns)
		span time.Duration // how far ahead most pushes go
	}{
		{"continuous", 0, 500 * time.Millisecond},
		{"ticks", 100 * time.Millisecond, 2 * time.Second},
		{"sparse", 0, 30 * time.Second},
		{"dense", 0, 50 * time.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var q eventQueue
			var want []event // pending, unsorted
			var seq uint64
			var now time.Duration
			at := func(d time.Duration) time.Duration {
				if c.tick > 0 && d%c.tick != 0 {
					d = (d/c.tick + 1) * c.tick
				}
				return d
			}
			push := func(d time.Duration) {
				seq++
				e := event{at: at(d), order: order(uint8(rng.IntN(5)), seq)}
				q.push(e)
				want = append(want, e)
			}
			for range 64 {
				push(time.Duration(rng.Int64N(int64(c.span))))
			}
			popped := 0
			for popped < 200_000 {
				top := q.top()
				if len(want) == 0 {
					if top != nil {
						t.Fatalf("pop %d: queue has %+v, want it empty", popped, *top)
					}
					break
				}
				if top != nil && len(want) < 100 && rng.IntN(4) == 0 {
					// Another source's event (an arrival, a patience
					// deadline) comes first, after the queue has moved its
					// calendar on to its own first event, and pushes one
					// that may fall before that.
					now += time.Duration(rng.Int64N(int64(top.at-now) + 1))
					push(now + time.Duration(rng.Int64N(int64(2*time.Millisecond))))
					continue
				}
				i := 0
				for j := range want {
					if want[j].before(&want[i]) {
						i = j
					}
				}
				if top == nil || *top != want[i] {
					t.Fatalf("pop %d: top %v, want %+v", popped, top, want[i])
				}
				if e := q.pop(); e != want[i] {
					t.Fatalf("pop %d: popped %+v, want %+v", popped, e, want[i])
				}
				now = want[i].at
				want = slices.Delete(want, i, i+1)
				popped++
				// As the loop does: zero or more pushes after each event.
				for n := rng.IntN(3); n > 0 && len(want) < 100 && popped < 190_000; n-- {
					switch k := rng.IntN(20); {
					case k == 0: // far beyond the calendar
						push(now + time.Duration(rng.Int64N(int64(10*time.Minute))))
					case k == 1: // at this very instant
						push(now)
					default:
						push(now + time.Duration(rng.Int64N(int64(c.span))))
					}
				}
			}
			if popped < 1000 {
				t.Fatalf("only %d events popped", popped)
			}
		})
	}
}

// TestSinceOrigin checks the loop's conversion from the engine's time
// against time.Time.Sub, near virtual zero and at the ends of what a
// time.Duration holds.
func TestSinceOrigin(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	check := func(tm time.Time) {
		if got, want := sinceOrigin(tm), tm.Sub(origin); got != want {
			t.Fatalf("sinceOrigin(%v) = %d, want %d", tm, got, want)
		}
	}
	check(time.Time{})
	check(origin)
	for _, d := range []time.Duration{1, -1, time.Hour, -time.Hour, 1<<63 - 1, -1 << 63} {
		check(origin.Add(d))
	}
	for range 100_000 {
		check(origin.Add(time.Duration(rng.Int64())))
		check(origin.Add(time.Duration(rng.Int64N(int64(48 * time.Hour)))))
		check(origin.Add(time.Duration(rng.Int64N(int64(10*time.Second))) - 5*time.Second))
		check(time.Unix(rng.Int64N(1<<40)-1<<39, rng.Int64N(1e9)).UTC())
	}
}
