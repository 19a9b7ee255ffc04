package admission

import (
	"math"
	"slices"
	"time"
)

// The drain estimate behind Retry-After (DrainTime) is the expected time
// until the k-th slot frees, k being the waiters ahead plus one. It is
// read from the slots themselves, not from a rate alone:
//
//   - Each slot in flight has an age. A slot younger than the calls seen
//     to complete recently (their mean, callTimes) frees when its call
//     reaches that length; one older than the longest of them is
//     overdue, and is expected to run about as long again as it has run
//     (a call that has outlived everything seen says nothing better about
//     its end). So when every slot is held by calls far longer than any
//     seen before, the hint grows with them instead of repeating the
//     last fast spell's figure.
//   - After its current call, each slot serves calls of the mean length,
//     or, while most slots are overdue (a brownout, or a burst whose few
//     short calls ended first), of the overdue slots' median age.
//
// A rate alone (completions per slot-second) is exact in a steady state
// but wrong in the transients Retry-After matters most in: at the start
// of a burst the slots have not yet had time to complete, so one or two
// early completions over many busy slot-seconds read as a drain ten
// times slower than it is; and with every slot held by long calls the
// last fast spell's rate stands in for calls that will not end soon.

// callMemory is how many completed calls' durations callTimes keeps.
const callMemory = 32

// callTimes remembers the durations of the last callMemory completed
// calls, however long ago: after a quiet spell, the last calls seen are
// the best guess at the next ones.
type callTimes struct {
	d    [callMemory]time.Duration
	n    int // how many of d are set
	next int // where the next one goes
}

func (t *callTimes) add(d time.Duration) {
	t.d[t.next] = max(d, 0)
	t.next = (t.next + 1) % callMemory
	t.n = min(t.n+1, callMemory)
}

// stats returns the mean and the longest of the remembered durations,
// in seconds; ok is false before the first completion.
func (t *callTimes) stats() (mean, longest float64, ok bool) {
	if t.n == 0 {
		return 0, 0, false
	}
	var sum time.Duration
	for _, d := range t.d[:t.n] {
		sum += d
		longest = max(longest, d.Seconds())
	}
	return sum.Seconds() / float64(t.n), longest, true
}

// remaining is the expected rest of a call of age a, given the mean and
// longest durations of recent calls.
func remaining(a, mean, longest float64) float64 {
	if a >= longest {
		return a // overdue: as long again
	}
	// Within the range seen: at least to the mean, and, for a mix of
	// short and long calls, a share of the way to the longest.
	return max(mean-a, (longest-a)/2, 0)
}

// kthFree is when the k-th slot frees (seconds from now), given each
// slot's remaining time rem and the length each serves after it, round.
//
// Only the k smallest remaining times can decide it: while fewer than k
// slots have freed by t, every slot that has is among them, and once k
// of them have, so have k frees. So with many slots and few ahead (the
// common refusal), the search runs over those k alone, to the same
// answer bit for bit; only its upper bracket reads every slot.
func kthFree(rem []float64, round float64, k int) float64 {
	hi := 0.0
	for _, r := range rem {
		hi = max(hi, r)
	}
	if k > 0 && k*8 <= len(rem) {
		rem = smallest(rem, k)
	}
	count := func(t float64) int {
		n := 0
		for _, r := range rem {
			if r <= t {
				n += int((t-r)/round) + 1
				if n >= k {
					return n
				}
			}
		}
		return n
	}
	hi += float64(k) * round
	lo := 0.0
	if count(lo) >= k {
		return 0
	}
	// count(hi) >= k; narrow to a millionth of round, at most
	// 64 halvings.
	for i := 0; i < 64 && hi-lo > round*1e-6; i++ {
		mid := (lo + hi) / 2
		if count(mid) >= k {
			hi = mid
		} else {
			lo = mid
		}
	}
	// The k-th slot frees in (lo, hi]: answer the first free after lo,
	// computed from the inputs, so that the answer does not depend on
	// where the halving stopped (a time-scaled run gets the same figure,
	// scaled).
	at := hi
	for _, r := range rem {
		m := 0.0
		if r <= lo {
			m = math.Floor((lo-r)/round) + 1
		}
		at = min(at, r+m*round)
	}
	return at
}

// smallest moves the k smallest of rem to its front, in ascending
// order, and returns them. REQUIRES: 0 < k <= len(rem).
func smallest(rem []float64, k int) []float64 {
	for i, r := range rem {
		if i >= k && r >= rem[k-1] {
			continue
		}
		// Insert r into the sorted front, dropping its largest when full.
		j := min(i, k-1)
		if i >= k {
			rem[i] = rem[k-1]
		}
		for j > 0 && rem[j-1] > r {
			rem[j] = rem[j-1]
			j--
		}
		rem[j] = r
	}
	return rem[:k]
}

// scheduleDrain is DrainTime's estimate for k slot frees, or ok false
// with no completed call yet (DrainTime falls back). REQUIRES: k >= 1.
func (c *Core) scheduleDrain(now time.Time, k int) (time.Duration, bool) {
	mean, longest, ok := c.calls.stats()
	if !ok {
		return 0, false
	}
	mean, longest = max(mean, 1e-6), max(longest, 1e-6)
	rem, over := c.remScratch[:0], c.overScratch[:0]
	nowAt := int64(now.Sub(c.flightBase))
	for e := c.flightHead; e != nil; e = e.flightNext {
		// now.Sub(e.started), read as two offsets from one base.
		a := max(time.Duration(nowAt-e.startedAt).Seconds(), 0)
		if a >= longest {
			over = append(over, a)
		}
		rem = append(rem, remaining(a, mean, longest))
	}
	c.remScratch, c.overScratch = rem, over
	round := mean
	if 2*len(over) > len(rem) {
		// Most slots are overdue (a brownout, or a burst's first calls
		// outliving the few short ones that ended): the calls after
		// them are expected to take as long as these typically have.
		slices.Sort(over)
		round = max(round, over[len(over)/2])
	}
	if len(rem) == 0 {
		// Refused with nothing in flight (no room at all): a call's length
		// per round of the limit's slots.
		return seconds(float64(k) * round / float64(max(shownLimit(c.cfg.Global), 1))), true
	}
	return seconds(kthFree(rem, round, k)), true
}

func seconds(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

// flightAdd and flightRemove keep the list of slots in flight, oldest
// first, that scheduleDrain reads.
func (c *Core) flightAdd(now time.Time, e *entry) {
	e.started = now
	if !c.flightBased {
		c.flightBase, c.flightBased = now, true
	}
	e.startedAt = int64(now.Sub(c.flightBase))
	e.flightPrev, e.flightNext = c.flightTail, nil
	if c.flightTail != nil {
		c.flightTail.flightNext = e
	} else {
		c.flightHead = e
	}
	c.flightTail = e
}

func (c *Core) flightRemove(e *entry) {
	if e.flightPrev != nil {
		e.flightPrev.flightNext = e.flightNext
	} else {
		c.flightHead = e.flightNext
	}
	if e.flightNext != nil {
		e.flightNext.flightPrev = e.flightPrev
	} else {
		c.flightTail = e.flightPrev
	}
	e.flightPrev, e.flightNext = nil, nil
}
