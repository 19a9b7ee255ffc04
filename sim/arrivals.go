package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/sluice-gw/sluice/scenario"
)

// segment is a stretch of the rate schedule where the rate moves linearly
// from r0 at t0 to r1 at t1 (r0 == r1 for a step).
type segment struct {
	t0, t1 time.Duration
	r0, r1 float64
}

// schedule turns a scenario's rate steps into segments covering [0, end).
func schedule(steps []scenario.RateStep, scale float64, end time.Duration) []segment {
	var segs []segment
	prev := 0.0
	at := time.Duration(0)
	for _, s := range steps {
		r := s.RPS * scale
		if s.At > at {
			segs = append(segs, segment{at, s.At, prev, prev})
			at = s.At
		}
		if s.Ramp > 0 {
			segs = append(segs, segment{at, at + s.Ramp, prev, r})
			at += s.Ramp
		}
		prev = r
	}
	if at < end {
		segs = append(segs, segment{at, end, prev, prev})
	}
	return segs
}

// rateAt is the instantaneous rate at t.
func rateAt(segs []segment, t time.Duration) float64 {
	for _, s := range segs {
		if t >= s.t0 && t < s.t1 {
			if s.t1 == s.t0 {
				return s.r1
			}
			f := float64(t-s.t0) / float64(s.t1-s.t0)
			return s.r0 + f*(s.r1-s.r0)
		}
	}
	return 0
}

// arrivals yields arrival times: evenly spaced (the k-th arrival when the
// rate's integral reaches k) or Poisson (exponential gaps at the current
// rate, seeded).
type arrivals struct {
	segs    []segment
	end     time.Duration
	poisson bool
	rng     *rand.Rand
	t       time.Duration
	seg     int
	// owed is the fraction of an arrival accumulated since the last one.
	owed float64
}

// next returns the next arrival time, or false past the end.
func (a *arrivals) next() (time.Duration, bool) {
	if a.poisson {
		return a.nextPoisson()
	}
	need := 1 - a.owed
	for a.seg < len(a.segs) {
		s := a.segs[a.seg]
		t0 := max(a.t, s.t0)
		// Integral of the rate from t0 to x is need; the rate is linear.
		span := (s.t1 - s.t0).Seconds()
		slope := 0.0
		if span > 0 {
			slope = (s.r1 - s.r0) / span
		}
		r0 := s.r0 + slope*(t0-s.t0).Seconds()
		avail := r0*(s.t1-t0).Seconds() + slope*math.Pow((s.t1-t0).Seconds(), 2)/2
		if avail >= need && need > 0 {
			var dx float64
			if slope == 0 {
				dx = need / r0
			} else {
				dx = (-r0 + math.Sqrt(r0*r0+2*slope*need)) / slope
			}
			a.t = t0 + time.Duration(dx*float64(time.Second))
			a.owed = 0
			if a.t >= a.end {
				return 0, false
			}
			return a.t, true
		}
		need -= avail
		a.seg++
		a.t = s.t1
	}
	return 0, false
}

func (a *arrivals) nextPoisson() (time.Duration, bool) {
	for a.t < a.end {
		r := rateAt(a.segs, a.t)
		if r <= 0 {
			// Jump to the next segment with traffic.
			moved := false
			for _, s := range a.segs {
				if s.t0 > a.t && (s.r0 > 0 || s.r1 > 0) {
					a.t, moved = s.t0, true
					break
				}
			}
			if !moved {
				return 0, false
			}
			continue
		}
		a.t += time.Duration(a.rng.ExpFloat64() / r * float64(time.Second))
		if a.t < a.end {
			return a.t, true
		}
	}
	return 0, false
}

// perTick returns how many arrivals land on the tick at t: the rate's
// integral over the tick, carried fractionally between ticks exactly as
// a tick simulation does.
func (a *arrivals) perTick(t, tick time.Duration) int {
	a.owed += rateAt(a.segs, t) * tick.Seconds()
	n := int(a.owed + 1e-9)
	a.owed -= float64(n)
	return n
}
