package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/fleet"
)

// A fleet of replicas shares one provider. Each replica's engine admits
// its share of a fixed concurrency limit, so that the fleet together
// never holds more calls open than the provider was given: the slots its
// part of the fleet's limits gives it (fleet.Slots of Config.Parts, the
// claim the host keeps in the fleet's store), which is the limit over
// the live replicas rounded down (at least 1) once the fleet is settled,
// less while a replica joins and the others have not yet given back
// what their calls hold, and nothing before the store granted any part.
// Without Parts, the share is the limit over the live replicas.
// Adaptive limits are not split: each replica's limit moves with the
// latency it sees, which is the shared provider's.

// shared is a fixed limit split between live replicas.
type shared struct {
	l        admission.Limiter
	replicas func() int
	parts    func() int64
}

// split is a shared limit and where its calls in flight are counted:
// scope (admission.NoScope: the global limit or a lane's) and lane
// (from 1; 0: none).
type split struct {
	s           shared
	scope, lane int
}

// fleetShare returns l split between the fleet's replicas, or l itself
// outside a fleet, and notes it among the engine's splits: scope and
// lane say where its calls are counted.
func (e *Engine) fleetShare(l admission.Limiter, cfg Config, scope, lane int) admission.Limiter {
	if l == nil || cfg.Replicas == nil {
		return l
	}
	s := shared{l, cfg.Replicas, cfg.Parts}
	e.splits = append(e.splits, split{s, scope, lane})
	return s
}

func (s shared) Limit() int {
	n := s.l.Limit()
	if n <= 0 {
		return n // unlimited stays unlimited
	}
	live := max(1, s.replicas())
	parts := fleet.Target(live)
	if s.parts != nil {
		parts = s.parts()
	}
	if k := fleet.Slots(n, parts, live); k > 0 {
		return k
	}
	return admission.None
}

// SharedLoads is each fixed limit this engine shares with the fleet,
// whole, with the calls it holds under it (those a replaced
// configuration still runs included): what the replica's claim must
// cover before it gives any part back (fleet.Need). Unlimited ones are
// left out.
func (e *Engine) SharedLoads() []fleet.Load {
	var out []fleet.Load
	for _, sp := range e.splits {
		n := sp.s.l.Limit()
		if n <= 0 {
			continue
		}
		in := e.adm.InFlight(sp.scope)
		if sp.lane > 0 {
			in = e.adm.LaneInFlight(sp.lane - 1)
		}
		out = append(out, fleet.Load{Limit: n, InFlight: in})
	}
	return out
}

// Pump starts the waiters that fit now: the host calls it when a
// shared limit grew (its part of the fleet's limits did).
func (e *Engine) Pump(now time.Time) (rd Ready) {
	e.pump(now, &rd)
	return rd
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
