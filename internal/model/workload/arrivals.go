package workload

import (
	"math"
	"math/rand/v2"
	"time"
)

// Spacing is how arrivals are spread under the rate.
type Spacing uint8

const (
	// Even arrivals fall where the rate's integral crosses each whole
	// number: the first after one request's worth, not at zero.
	Even Spacing = iota
	// Poisson arrivals fall where the integral has grown by an Exp(1)
	// draw since the last one, which is a Poisson process at the
	// instantaneous rate, across steps and ramps alike.
	Poisson
)

// ParseSpacing reads clients.arrivals: "" or "even", or "poisson".
func ParseSpacing(s string) (Spacing, bool) {
	switch s {
	case "", "even":
		return Even, true
	case "poisson":
		return Poisson, true
	}
	return Even, false
}

// endSlack keeps an arrival that lands on the end give or take rounding,
// so that even arrivals number the integral over [0, end].
const endSlack = time.Microsecond

// Arrivals yields one run's arrival times in order. It is pure: the
// simulator pushes each time as an event on its virtual clock, the load
// generator sleeps until it on the wall clock. Not safe for concurrent
// use.
//
// Both spacings walk forward from the last arrival until the rate's
// integral has grown by the amount owed (1, or an exponential draw), so
// a fraction of an arrival left at the end of one segment carries into
// the next. Times are truncated to the nanosecond, never rounded up, so
// an even arrival due exactly on the end is not lost to rounding.
type Arrivals struct {
	sched   Schedule
	end     time.Duration
	spacing Spacing
	rng     *rand.Rand
	t       time.Duration // the last arrival, or where the walk stands
	seg     int           // the segment holding t
	done    bool
	owed    float64 // PerTick: arrivals accrued and not yet issued
}

// NewArrivals returns the arrivals of s up to end (inclusive, within a
// microsecond). rng is drawn from only for Poisson spacing, once per
// arrival, so the host's seed fixes the sequence.
func NewArrivals(s Schedule, end time.Duration, sp Spacing, rng *rand.Rand) *Arrivals {
	return &Arrivals{sched: s, end: end, spacing: sp, rng: rng}
}

// Next returns the next arrival as an offset from the start, or false
// when none is left up to the end.
//
// REQUIRES: the Arrivals is not also driven by PerTick.
func (a *Arrivals) Next() (time.Duration, bool) {
	if a.done {
		return 0, false
	}
	need := 1.0
	if a.spacing == Poisson {
		need = a.rng.ExpFloat64()
	}
	limit := a.end + endSlack
	for a.seg < len(a.sched.segs) && !a.done {
		s := a.sched.segs[a.seg]
		t0 := max(a.t, s.t0)
		if t0 > limit {
			break
		}
		if s.flat() {
			if s.r0 > 0 {
				if s.t1 == forever || s.r0*(s.t1-t0).Seconds() >= need {
					return a.arrive(t0, need/s.r0, limit)
				}
				need -= s.r0 * (s.t1 - t0).Seconds()
			}
		} else {
			rem := (s.t1 - t0).Seconds()
			r := s.rate(t0)
			avail := (r + s.r1) / 2 * rem
			if avail >= need {
				// r·x + k·x²/2 = need, solved in the form that stays
				// exact when r is zero and when the slope k is tiny.
				k := (s.r1 - s.r0) / (s.t1 - s.t0).Seconds()
				x := 2 * need / (r + math.Sqrt(max(0, r*r+2*k*need)))
				return a.arrive(t0, min(x, rem), limit)
			}
			need -= avail
		}
		if s.t1 == forever {
			break // a rate of zero for ever: nothing more arrives
		}
		a.seg++
		a.t = s.t1
	}
	a.done = true
	return 0, false
}

// arrive places an arrival x seconds after t0, unless that is past limit.
func (a *Arrivals) arrive(t0 time.Duration, x float64, limit time.Duration) (time.Duration, bool) {
	if x > (limit - t0).Seconds() {
		a.done = true // also keeps a huge x from overflowing a Duration
		return 0, false
	}
	a.t = t0 + time.Duration(x*float64(time.Second))
	if a.t > limit {
		a.done = true
		return 0, false
	}
	return a.t, true
}

// PerTick returns how many arrivals land on the tick starting at t, for
// a host that admits arrivals in batches, tick by tick, as a tick
// simulation does: the rate's integral over [t, t+tick), with the
// fraction of an arrival carried to the next tick. Spacing is ignored:
// within a tick there is no time to space them over.
//
// REQUIRES: the Arrivals is not also driven by Next.
func (a *Arrivals) PerTick(t, tick time.Duration) int {
	a.owed += a.sched.Integral(t, t+tick)
	// The epsilon keeps 0.1 s × 10/s from coming out as 0.9999… and
	// slipping an arrival to the next tick.
	n := int(a.owed + 1e-9)
	a.owed -= float64(n)
	return n
}

// PerTickSeed is PerTick counted as seed 000's tick loop counts it: a
// flat rate's tick adds rate × tick-in-ms / 1000 to a float sum (a ramp's,
// its integral), and the tick admits one arrival for each whole 1 the sum
// holds, with no allowance for rounding. Where rate × tick is not exact
// in binary the sum can fall a hair short of a whole arrival, which then
// lands a tick late: the seed's count, not the integral's.
//
// REQUIRES: the Arrivals is driven by neither Next nor PerTick.
func (a *Arrivals) PerTickSeed(t, tick time.Duration) int {
	if r, ok := a.sched.flatOver(t, t+tick); ok {
		a.owed += r * (float64(tick) / float64(time.Millisecond)) / 1000
	} else {
		a.owed += a.sched.Integral(t, t+tick)
	}
	n := 0
	for ; a.owed >= 1; a.owed-- {
		n++
	}
	return n
}
