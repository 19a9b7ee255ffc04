package loadgen

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/sluice-gw/sluice/scenario"
)

// segment is a stretch of the rate schedule over which the rate changes
// linearly (or not at all) from r0 to r1. Times are in seconds because the
// arithmetic is on areas (requests), not on clock readings.
type segment struct {
	start, end float64 // end is +Inf for the last segment
	r0, r1     float64 // requests per second at start and end
}

func (s segment) rate(t float64) float64 {
	if s.r0 == s.r1 || math.IsInf(s.end, 1) {
		return s.r0
	}
	return s.r0 + (s.r1-s.r0)*(t-s.start)/(s.end-s.start)
}

// area is the number of requests the segment carries.
func (s segment) area() float64 {
	if math.IsInf(s.end, 1) {
		if s.r0 == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return (s.r0 + s.r1) / 2 * (s.end - s.start)
}

// offset returns how far into the segment the area reaches x, for
// 0 <= x <= area(). Solving r0*s + k*s^2 = x in the form 2x/(r0+sqrt(...))
// stays exact when the ramp is flat (k = 0) and when it starts at zero.
func (s segment) offset(x float64) float64 {
	if x <= 0 {
		return 0
	}
	if s.r0 == s.r1 || math.IsInf(s.end, 1) {
		return x / s.r0
	}
	k := (s.r1 - s.r0) / (2 * (s.end - s.start))
	disc := max(0, s.r0*s.r0+4*k*x)
	return min(2*x/(s.r0+math.Sqrt(disc)), s.end-s.start)
}

// schedule is the piecewise-linear arrival rate of the clients, already
// scaled. It covers [0, +Inf): zero before the first step, and the last
// step's rate for ever after it.
type schedule struct {
	segs []segment
}

// newSchedule turns rate steps into segments. A step with a ramp moves from
// the previous step's rate to its own over the ramp; a step that comes
// before an earlier ramp finishes cuts that ramp short where it stands.
func newSchedule(steps []scenario.RateStep, rpsScale, timeScale float64) schedule {
	var segs []segment
	add := func(start, end, r0, r1 float64) {
		if end > start {
			segs = append(segs, segment{start, end, r0, r1})
		}
	}
	first := math.Inf(1)
	if len(steps) > 0 {
		first = steps[0].At.Seconds() * timeScale
	}
	add(0, first, 0, 0)
	prev := 0.0
	for i, st := range steps {
		at := st.At.Seconds() * timeScale
		rps := st.RPS * rpsScale / timeScale
		next := math.Inf(1)
		if i+1 < len(steps) {
			next = steps[i+1].At.Seconds() * timeScale
		}
		if ramp := st.Ramp.Seconds() * timeScale; ramp > 0 {
			seg := segment{at, at + ramp, prev, rps}
			if seg.end > next {
				seg.end, seg.r1 = next, seg.rate(next)
			}
			add(seg.start, seg.end, seg.r0, seg.r1)
			at = seg.end
		}
		add(at, next, rps, rps)
		prev = rps
	}
	if len(segs) == 0 || !math.IsInf(segs[len(segs)-1].end, 1) {
		// Only reachable with no steps at all: nothing ever arrives.
		segs = append(segs, segment{0, math.Inf(1), 0, 0})
	}
	return schedule{segs: segs}
}

// rate is the scheduled arrival rate at d.
func (s schedule) rate(d time.Duration) float64 {
	t := d.Seconds()
	for _, seg := range s.segs {
		if t < seg.end {
			return seg.rate(t)
		}
	}
	return 0
}

// integral is the expected number of arrivals in [0, d].
func (s schedule) integral(d time.Duration) float64 {
	t, sum := d.Seconds(), 0.0
	for _, seg := range s.segs {
		if t <= seg.start {
			break
		}
		end := min(t, seg.end)
		sum += (seg.r0 + seg.rate(end)) / 2 * (end - seg.start)
	}
	return sum
}

// arrivals yields arrival times. Both kinds walk the cumulative rate
// (the integral of the schedule): even arrivals land where it crosses each
// whole number, Poisson arrivals where it has grown by an exponential draw
// since the last one. Drawing in that space makes a Poisson process at the
// instantaneous rate however the rate changes, ramps included.
type arrivals struct {
	segs    []segment
	i       int     // current segment
	base    float64 // area of the segments before i
	target  float64 // cumulative area of the last arrival
	poisson *rand.Rand
}

func newArrivals(s schedule, poisson bool, seed uint64) *arrivals {
	a := &arrivals{segs: s.segs}
	if poisson {
		a.poisson = rand.New(rand.NewPCG(seed, 0xa4417a15))
	}
	return a
}

// next returns the next arrival time, or false when the rate stays zero
// for ever.
func (a *arrivals) next() (time.Duration, bool) {
	if a.poisson != nil {
		a.target += a.poisson.ExpFloat64()
	} else {
		a.target++
	}
	for a.i < len(a.segs) {
		seg := a.segs[a.i]
		area := seg.area()
		if a.target <= a.base+area {
			t := seg.start + seg.offset(a.target-a.base)
			return time.Duration(t * float64(time.Second)), true
		}
		a.base += area
		a.i++
	}
	return 0, false
}
