package admission

// Limiter supplies a concurrency limit. Core reads it on every decision, so
// an adaptive algorithm can move the limit between calls; after raising it,
// the host calls Core.Pump so waiters can use the new room.
type Limiter interface {
	Limit() int
}

// Fixed is a Limiter that never moves. Zero or less means unlimited.
type Fixed int

// Limit returns the fixed value.
func (f Fixed) Limit() int { return int(f) }

var _ Limiter = Fixed(0)
