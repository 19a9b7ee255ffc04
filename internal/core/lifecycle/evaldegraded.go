package lifecycle

// Eval-degraded targets: a target whose fallback evals (package evals)
// pass too rarely answers, but too often wrongly. Its breaker may be
// closed and its latency fine; what the evals found is that its answers
// are worse. So routing ranks it after every target that is not
// degraded, rather than treating it as out of rotation:
//
//   - a new request (route) goes to the first target that is not
//     degraded and takes it: in rotation, recovering (for its share, or
//     for all of it with nowhere else to go), or out of rotation for
//     slowness but still able to answer before the request's deadline
//     (reach.go). Only when none can does a degraded target serve, by
//     the same rules, before the request is held for a probe's verdict
//     (hold.go) or refused: a likely-wrong answer is still better than
//     none, and a degraded target is the last resort, not a dead end;
//   - a hedge or a rescue does not go to a degraded target: both race a
//     call already running on a target that answers correctly, and the
//     first answer would win. The exception is a call that would be
//     answered early because its provider can no longer meet its
//     deadline (reach.go): it is rescued onto a degraded target instead,
//     as the last resort it is for new requests;
//   - a retry, whose first call has failed, tries the targets that are
//     not degraded first, then a degraded one.
//
// Requests already waiting for a target when it is degraded stay where
// they are; a target's degradation changes where new decisions go, as a
// breaker's fail-back weight does. A model with one target, or whose
// targets are all degraded, routes as if none were.

// SetEvalDegraded marks target i (an index into the model's
// Route.Targets) of model degraded by its evals, or not. The Route must
// carry the model's name (FromConfig sets it) so that requests built by
// Route.Request name their model.
func (e *Engine) SetEvalDegraded(model string, i int, on bool) {
	if e.evalDegraded == nil {
		e.evalDegraded = map[string][]bool{}
	}
	d := e.evalDegraded[model]
	for len(d) <= i {
		d = append(d, false)
	}
	d[i] = on
	e.evalDegraded[model] = d
}

// EvalDegraded reports whether target i of model is degraded by its evals.
func (e *Engine) EvalDegraded(model string, i int) bool {
	d := e.evalDegraded[model]
	return i >= 0 && i < len(d) && d[i]
}

// degradedTargets returns, per target of r, whether it is degraded; nil
// when none is, or when all are (then none is worse than another).
func (e *Engine) degradedTargets(r Request) []bool {
	d := e.evalDegraded[r.Model]
	if len(d) == 0 {
		return nil
	}
	n := len(targets(r))
	out := make([]bool, n)
	some, all := false, true
	for i := range n {
		out[i] = i < len(d) && d[i]
		some = some || out[i]
		all = all && out[i]
	}
	if !some || all {
		return nil
	}
	return out
}
