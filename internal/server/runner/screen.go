package runner

import (
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
)

// Screen reports whether req's budgets would refuse it now
// (Engine.Screen), as Acquire would: nil when they would not. It takes
// nothing.
func (r *Runner) Screen(req lifecycle.Request) *admission.Rejection {
	r.mu.Lock()
	a, ok := r.e.Screen(r.now(), req)
	r.mu.Unlock()
	if ok {
		return nil
	}
	rej := rejection(a.Refusal)
	rej.Dimension, rej.TooLarge = a.Budget.Dimension.String(), a.Budget.Never
	return rej
}
