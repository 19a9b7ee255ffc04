package lifecycle

import "github.com/sluice-gw/sluice/admission"

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
