package fleet

import "github.com/sluice-gw/sluice/internal/core/breaker"

// Verdict is a breaker verdict one replica sends the others, which they
// adopt (lifecycle.Engine.Adopt): the provider's new state, the
// fail-back step, and why.
type Verdict struct {
	To     breaker.State
	Step   int
	Reason breaker.Reason
}

// Announce reports whether a replica tells the fleet of a breaker
// transition to state to, for reason why. It announces the verdicts it
// reached from its own evidence: a trip, a fail-back step, the close.
// It does not announce
//
//   - a verdict it adopted (ReasonFleet): the replica that reached it
//     has told everyone already, and echoing it would loop;
//   - a move to HalfOpen: that is the start of its own probe, which
//     decides nothing yet; the probe's outcome is what the fleet hears
//     (a fail-back step, or ProbeFailed).
func Announce(to breaker.State, why breaker.Reason) bool {
	return why != breaker.ReasonFleet && to != breaker.HalfOpen
}

// ProbeFailed is the verdict a replica sends when its probe of a
// provider failed. A failed probe moves no breaker (the provider simply
// stays out), so no transition announces it; but the other replicas,
// which do not probe (they do not hold the probe lease), hold requests
// for exactly this verdict, and adopting it changes no breaker of
// theirs: HalfOpen, step -1, ReasonProbeError.
func ProbeFailed() Verdict {
	return Verdict{To: breaker.HalfOpen, Step: -1, Reason: breaker.ReasonProbeError}
}
