package lifecycle

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestTimerQueueOrder drives one kind of timer queue with a random mix
// of arming in order (the FIFO's case), out of order (the heap's), ties,
// disarming anywhere, re-arming and popping, and checks every pop
// against a plain sorted list of the armed timers: the earliest time,
// ties by ticket.
func TestTimerQueueOrder(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		h := timerHeap{kind: slowTimer}
		var reqs []*request
		armed := map[*request]time.Time{}
		now := time.Duration(0)
		want := func() []*request {
			var out []*request
			for q := range armed {
				out = append(out, q)
			}
			slices.SortFunc(out, func(a, b *request) int {
				if c := armed[a].Compare(armed[b]); c != 0 {
					return c
				}
				return cmp.Compare(a.id, b.id)
			})
			return out
		}
		for step := range 4000 {
			switch k := rng.IntN(10); {
			case k < 5: // arm a new or disarmed request
				var q *request
				if len(reqs) > 0 && rng.IntN(3) == 0 {
					q = reqs[rng.IntN(len(reqs))]
					if q.armed(slowTimer) {
						continue
					}
				} else {
					q = &request{id: ID(len(reqs) + 1), timerIdx: unarmed}
					reqs = append(reqs, q)
				}
				d := now + 2*time.Second // in order, mostly
				if rng.IntN(4) == 0 {
					d = now + time.Duration(rng.IntN(3000))*time.Millisecond
				}
				h.push(q, at(d))
				armed[q] = at(d)
			case k < 7 && len(reqs) > 0: // disarm anywhere
				q := reqs[rng.IntN(len(reqs))]
				h.remove(q)
				delete(armed, q)
			case k < 9:
				now += time.Duration(rng.IntN(300)) * time.Millisecond
				for h.due(at(now)) {
					w := want()
					q := h.pop()
					if q != w[0] {
						t.Fatalf("seed %d step %d: popped request %d (at %v), want %d (at %v)", seed, step, q.id, armed[q].Sub(t0), w[0].id, armed[w[0]].Sub(t0))
					}
					delete(armed, q)
				}
			default:
				if got, w := h.Len(), len(armed); got != w {
					t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, got, w)
				}
				at, ok := h.next()
				if w := want(); ok != (len(w) > 0) || (ok && !at.Equal(armed[w[0]])) {
					t.Fatalf("seed %d step %d: next %v %v, want the earliest of %d", seed, step, at.Sub(t0), ok, len(w))
				}
			}
		}
	}
}
