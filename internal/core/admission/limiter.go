package admission

import "math"

// Limiter supplies a concurrency limit. Core reads it on every decision, so
// an adaptive algorithm can move the limit between calls; after raising it,
// the host calls Core.Pump so waiters can use the new room.
type Limiter interface {
	Limit() int
}

// None is the limit of a Limiter that admits nothing for now: requests
// wait as at a full limit (critical ones may still use Config.Reserved),
// and the host calls Core.Pump once it has room again. A replica of a
// fleet reports it for a limit it shares while it holds no part of it
// (package lifecycle, fleet.go). Every other value of zero or less
// means unlimited.
const None = math.MinInt

// Fixed is a Limiter that never moves. Zero or less means unlimited.
type Fixed int

// Limit returns the fixed value.
func (f Fixed) Limit() int { return int(f) }

var _ Limiter = Fixed(0)
