package quota

import (
	"math/bits"
	"time"
)

// minute is the period every limit is counted over, in nanoseconds.
const minute = uint64(time.Minute)

// maxSpan caps a dimension's backlog (about 146 years). Only debt can
// reach it, and only from an absurd overrun: a charge that would carry
// the backlog further stops here, so that no sum overflows. Everything
// below it is exact.
const maxSpan = uint64(1) << 62

// maxRefill bounds Burst·1min/PerMinute, the time a full burst takes to
// come back: far below maxSpan, so that a take can never saturate.
const maxRefill = 100 * 365 * 24 * time.Hour

// span is an exact, non-negative length of time for one dimension:
// ns + frac/per nanoseconds, where per is the dimension's limit per
// minute. The emission interval is 1min/per = 60e9/per ns, so every
// multiple of it is a span with no rounding; keeping the remainder over
// per is what makes a sustained load get exactly its limit per minute
// rather than drift by a rounded nanosecond per request.
type span struct {
	ns   uint64 // whole nanoseconds, at most maxSpan
	frac uint64 // the remainder in units of 1/per ns, below per
}

var fullSpan = span{ns: maxSpan}

func (a span) zero() bool { return a.ns == 0 && a.frac == 0 }

// less reports a < b.
func (a span) less(b span) bool {
	return a.ns < b.ns || a.ns == b.ns && a.frac < b.frac
}

// ceil is a rounded up to a whole nanosecond.
func (a span) ceil() time.Duration {
	if a.frac > 0 {
		return time.Duration(a.ns + 1)
	}
	return time.Duration(a.ns)
}

// units returns n·1min/per exactly, or fullSpan if that is beyond maxSpan.
func units(n, per uint64) span {
	hi, lo := bits.Mul64(n, minute)
	if hi >= per {
		return fullSpan // the quotient would not fit in 64 bits
	}
	q, r := bits.Div64(hi, lo, per)
	if q > maxSpan || q == maxSpan && r > 0 {
		return fullSpan
	}
	return span{q, r}
}

// add returns a+b, saturating at maxSpan.
func add(a, b span, per uint64) span {
	s := span{a.ns + b.ns, a.frac + b.frac} // no overflow: each ns ≤ 2^62, each frac < per < 2^63
	if s.frac >= per {
		s.frac -= per
		s.ns++
	}
	if s.ns > maxSpan || s.ns == maxSpan && s.frac > 0 {
		return fullSpan
	}
	return s
}

// sub returns a−b, or zero if b ≥ a.
func sub(a, b span, per uint64) span {
	if !b.less(a) {
		return span{}
	}
	s := span{ns: a.ns - b.ns}
	if a.frac < b.frac {
		s.ns--
		s.frac = a.frac + per - b.frac // < 2·per < 2^64
	} else {
		s.frac = a.frac - b.frac
	}
	return s
}

// drain returns a less d whole nanoseconds, or zero if d ≥ a.
func drain(a span, d time.Duration) span {
	if d <= 0 {
		return a
	}
	if uint64(d) > a.ns {
		return span{} // a < a.ns+1 ≤ d
	}
	return span{a.ns - uint64(d), a.frac}
}

// perUnits returns a·per/1min rounded up: how many units of budget a span
// of backlog holds, capped at 2^64−1 (far above any burst).
func perUnits(a span, per uint64) uint64 {
	hi, lo := bits.Mul64(a.ns, per)
	var c uint64
	lo, c = bits.Add64(lo, a.frac, 0)
	hi += c
	if hi >= minute {
		return ^uint64(0)
	}
	q, r := bits.Div64(hi, lo, minute)
	if r > 0 {
		if q == ^uint64(0) {
			return q
		}
		q++
	}
	return q
}
