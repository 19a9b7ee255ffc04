package workload

import (
	"math"
	"time"
)

// Step is one step of a rate schedule, as a scenario's clients.rate
// writes it: from At on, the rate is RPS requests per second, reached
// linearly over Ramp from the rate in force at At.
type Step struct {
	At   time.Duration
	RPS  float64
	Ramp time.Duration
}

// forever ends the last segment: the last step's rate holds for ever, and
// the host's end, not the schedule, stops arrivals.
const forever = time.Duration(math.MaxInt64)

// segment is a stretch [t0, t1) over which the rate moves linearly from
// r0 to r1 (r0 == r1 for a held rate). Times are offsets from the start,
// as both hosts count them, so no host converts clock readings.
type segment struct {
	t0, t1 time.Duration
	r0, r1 float64
}

func (s segment) flat() bool { return s.r0 == s.r1 || s.t1 == forever }

// rate is the rate at t, for t0 <= t <= t1.
func (s segment) rate(t time.Duration) float64 {
	if s.flat() {
		return s.r0
	}
	return s.r0 + (s.r1-s.r0)*float64(t-s.t0)/float64(s.t1-s.t0)
}

// area is the expected number of arrivals in [a, b], inside the segment.
func (s segment) area(a, b time.Duration) float64 {
	if s.flat() {
		return s.r0 * (b - a).Seconds()
	}
	return (s.rate(a) + s.rate(b)) / 2 * (b - a).Seconds()
}

// Schedule is a piecewise-linear arrival rate over [0, forever), already
// scaled. The zero Schedule has no traffic.
type Schedule struct {
	segs []segment
}

// NewSchedule builds the schedule of steps, which must be in time order
// (scenario validation sees to it). rpsScale multiplies every rate;
// timeScale multiplies every time and divides every rate, so the same
// requests arrive in proportionally less (or more) time.
//
// Boundaries: before the first step the rate is zero; at exactly a
// step's At the step already applies. A step cuts short a ramp still
// under way, and its own ramp starts from wherever the cut ramp stood,
// so the rate only ever jumps at a step without a ramp. Steps that share
// an At apply in order, the last one winning.
func NewSchedule(steps []Step, rpsScale, timeScale float64) Schedule {
	var segs []segment
	add := func(s segment) {
		if s.t1 > s.t0 {
			segs = append(segs, s)
		}
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * timeScale) }
	cur := 0.0 // the rate in force where the previous step's span ended
	at := time.Duration(0)
	if len(steps) > 0 {
		at = max(0, scale(steps[0].At))
	}
	add(segment{0, at, 0, 0})
	for i, st := range steps {
		next := forever
		if i+1 < len(steps) {
			next = max(at, scale(steps[i+1].At))
		}
		rps := st.RPS * rpsScale / timeScale
		if ramp := scale(st.Ramp); ramp > 0 {
			s := segment{at, forever, cur, rps}
			if ramp < forever-at { // a ramp of centuries must not wrap round
				s.t1 = at + ramp
			}
			if next < s.t1 {
				// Cut short by the next step, which starts where this
				// ramp stands.
				s.t1, s.r1 = next, s.rate(next)
				add(s)
				at, cur = next, s.r1
				continue
			}
			add(s)
			at = s.t1
		}
		cur = rps
		if at < next {
			add(segment{at, next, rps, rps})
			at = next
		}
	}
	if len(segs) == 0 || segs[len(segs)-1].t1 != forever {
		// Only without steps: no traffic, ever.
		segs = append(segs, segment{at, forever, cur, cur})
	}
	return Schedule{segs: segs}
}

// Rate is the scheduled rate at t.
func (s Schedule) Rate(t time.Duration) float64 {
	for _, seg := range s.segs {
		if t < seg.t1 {
			return seg.rate(max(t, seg.t0))
		}
	}
	return 0
}

// flatOver returns the rate over [a, b) when one flat segment holds all
// of it.
func (s Schedule) flatOver(a, b time.Duration) (float64, bool) {
	for _, seg := range s.segs {
		if seg.t1 <= a {
			continue
		}
		if seg.t0 <= a && seg.t1 >= b && seg.flat() {
			return seg.r0, true
		}
		break
	}
	return 0, false
}

// Integral is the expected number of arrivals in [a, b).
func (s Schedule) Integral(a, b time.Duration) float64 {
	sum := 0.0
	for _, seg := range s.segs {
		if seg.t1 <= a {
			continue
		}
		if seg.t0 >= b {
			break
		}
		sum += seg.area(max(a, seg.t0), min(b, seg.t1))
	}
	return sum
}
