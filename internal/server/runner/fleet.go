package runner

import (
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/fleet"
)

// Adopt follows a fleet verdict on scope s (lifecycle.Engine.Adopt).
func (r *Runner) Adopt(s int, to breaker.State, step int, why breaker.Reason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.applyLocked(now, r.e.Adopt(now, s, to, step, why))
}

// ShareEvidence: see lifecycle.Engine.ShareEvidence.
func (r *Runner) ShareEvidence() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.e.ShareEvidence()
}

// DrainEvidence: see lifecycle.Engine.DrainEvidence.
func (r *Runner) DrainEvidence() [][]breaker.Evidence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.DrainEvidence()
}

// AddEvidence: see lifecycle.Engine.AddEvidence.
func (r *Runner) AddEvidence(s int, ev []breaker.Evidence) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.applyLocked(now, r.e.AddEvidence(now, s, ev))
}

// SharedLoads calls f with the engine's shared limits and the calls
// under each (lifecycle.Engine.SharedLoads), under the Runner's lock, so
// that no request is admitted while f acts on them: a fleet's replica
// gives back part of its claim there (fleet.Claim.Ask), and a call
// admitted between the reading and the giving back could be one the
// other replicas' parts do not leave it. f must not call the Runner.
func (r *Runner) SharedLoads(f func([]fleet.Load)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.e.SharedLoads())
}

// Pump starts the waiters that fit now (lifecycle.Engine.Pump): the
// host calls it when its part of the fleet's limits grew.
func (r *Runner) Pump() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.applyLocked(now, r.e.Pump(now))
}
