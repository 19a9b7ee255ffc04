package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/admission"
	"github.com/sluice-gw/sluice/breaker"
)

// A fleet of replicas shares one provider. Each replica's engine admits
// its share of a fixed concurrency limit, the limit over the live
// replica count rounded down (at least 1), so the fleet together never
// holds more calls open than the provider was given; a replica that
// joins or leaves moves every share at the next decision. Adaptive
// limits are not split: each replica's limit moves with the latency it
// sees, which is the shared provider's.

// shared is a fixed limit split between live replicas.
type shared struct {
	l        admission.Limiter
	replicas func() int
}

// share returns l split between replicas(), or l itself outside a fleet.
func share(l admission.Limiter, replicas func() int) admission.Limiter {
	if l == nil || replicas == nil {
		return l
	}
	return shared{l, replicas}
}

func (s shared) Limit() int {
	n := s.l.Limit()
	if n <= 0 {
		return n // unlimited stays unlimited
	}
	return max(1, n/max(1, s.replicas()))
}

// Adopt makes scope's breaker follow a verdict another replica of the
// fleet reached (breaker.Adopt), and carries out what follows from it:
// waiters for a provider now out of rotation move on, as after a trip of
// its own.
func (e *Engine) Adopt(now time.Time, s int, to breaker.State, step int) (rd Ready) {
	if sc := e.scope(s); sc != nil && sc.cfg.Breaker != nil {
		sc.cfg.Breaker.Adopt(now, to, step)
		e.settle(now, &rd)
		e.pump(now, &rd)
	}
	return rd
}

// Adopt follows a fleet verdict on scope s (Engine.Adopt).
func (r *Runner) Adopt(s int, to breaker.State, step int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.applyLocked(now, r.e.Adopt(now, s, to, step))
}
