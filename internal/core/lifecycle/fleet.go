package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
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
//
// A HalfOpen verdict is the fleet's prober saying its probe failed (a
// failed probe moves no breaker, so it is not a transition): the
// breaker stays as it is, and if it has the provider out of rotation,
// the requests it holds for a probe's verdict (hold.go), which this
// replica does not send itself, have theirs now and are refused, as a
// failed probe of its own would refuse them. An Open verdict on a
// provider already out refuses them likewise.
//
// why is the reason the verdict was reached, which says whether the
// provider is out for slowness (and so may still serve a request with
// time to wait: reach.go) or for errors; empty counts as errors.
func (e *Engine) Adopt(now time.Time, s int, to breaker.State, step int, why breaker.Reason) (rd Ready) {
	if sc := e.scope(s); sc != nil && sc.cfg.Breaker != nil {
		sc.cfg.Breaker.Adopt(now, to, step)
		e.settle(now, &rd)
		if st, _ := sc.cfg.Breaker.State(now); to == breaker.Open && (st == breaker.Open || st == breaker.HalfOpen) {
			if why == "" || why == breaker.ReasonFleet {
				why = breaker.ReasonErrorRate
			}
			e.outOfRotation(s, true, why)
		}
		if st, _ := sc.cfg.Breaker.State(now); (to == breaker.Open || to == breaker.HalfOpen) && (st == breaker.Open || st == breaker.HalfOpen) && e.holding[s] {
			e.refuseHeld(now, s, now, &rd)
		}
		e.pump(now, &rd)
	}
	return rd
}

// ShareEvidence makes every breaker keep its own counts for
// DrainEvidence: a fleet's replicas exchange them, so that each judges
// the fleet's calls, not its share of them.
func (e *Engine) ShareEvidence() {
	for _, sc := range e.scopes {
		if sc.cfg.Breaker != nil {
			sc.cfg.Breaker.ShareEvidence()
		}
	}
}

// DrainEvidence returns each scope's own breaker counts since the last
// drain, indexed by scope (nil where there is none).
func (e *Engine) DrainEvidence() [][]breaker.Evidence {
	out := make([][]breaker.Evidence, len(e.scopes))
	for i, sc := range e.scopes {
		if sc.cfg.Breaker != nil {
			out[i] = sc.cfg.Breaker.DrainEvidence()
		}
	}
	return out
}

// AddEvidence counts another replica's calls on scope s, and carries out
// what a trip on them means.
func (e *Engine) AddEvidence(now time.Time, s int, ev []breaker.Evidence) (rd Ready) {
	if sc := e.scope(s); sc != nil && sc.cfg.Breaker != nil {
		sc.cfg.Breaker.AddEvidence(now, ev)
		e.settle(now, &rd)
		e.pump(now, &rd)
	}
	return rd
}

// ProbeFailed reports whether a synthetic probe that ended with o failed:
// it timed out, or the provider answered with an error other than a 429
// (pacing, not health). Hosts of a fleet announce such a probe, which
// moves no breaker of its own, to the replicas that do not probe.
func ProbeFailed(o Outcome) bool {
	return o.Kind == TimedOut || (o.Kind != OK && o.Kind != Cancelled && o.Status != 429)
}
