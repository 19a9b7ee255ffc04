package lifecycle

import "time"

// Inherit counts calls in flight that a replaced configuration's engine
// admitted and that are still running upstream (admission.Core.Inherit):
// global requests, and scoped[s] calls on this engine's scope s. The
// deltas are signed; when room frees, waiters start, and the Ready says
// which.
func (e *Engine) Inherit(now time.Time, global int, scoped []int) (rd Ready) {
	e.adm.Inherit(global, scoped)
	e.pump(now, &rd)
	return rd
}
