package runner

import "github.com/sluice-gw/sluice/internal/core/breaker"

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
