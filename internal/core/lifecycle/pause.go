package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// A provider's Retry-After: a refusal (429, 503, 529) that asks for a
// wait says something about the provider, not only about the call it
// refused, and what it says is bounded before anyone acts on it, since
// it is one provider answer and must not change what everybody gets for
// longer than an operator would accept.
//
//   - A wait of at most the retry's WaitMax (DefaultRetryWait, 3 s)
//     that fits the request's deadline is waited out by a retry on the
//     same provider, its retry budget permitting (Engine.RetryCall); a
//     longer one is never held: the request fails over to its next
//     target at once, or is answered at once.
//   - A wait longer than RetryAfterHold also pauses the provider for
//     that long, capped at its breaker's open_for_max (2 min without a
//     breaker): no new call goes there, so later requests fail over or
//     are refused fast, rather than being sent to collect the same
//     refusal, and requests waiting for it move on or are refused. (The
//     one request waiting it out comes back as the pause ends.)
//   - A synthetic probe answered so waits as long, capped the same way
//     (probe.go).

// RetryAfterHold is the longest Retry-After that does not pause its
// provider.
const RetryAfterHold = time.Second

// maxPause bounds how long a provider's Retry-After pauses scope s.
func (e *Engine) maxPause(s int) time.Duration {
	if sc := e.scope(s); sc != nil && sc.cfg.Breaker != nil {
		return sc.cfg.Breaker.OpenForMax()
	}
	return e.scaled(breaker.DefaultOpenForMax)
}

// BoundRetryAfter is the wait a provider's Retry-After d earns on scope
// s: the most a host should pass on to a client, too.
func (e *Engine) BoundRetryAfter(s int, d time.Duration) time.Duration {
	return min(d, e.maxPause(s))
}

// observeRefusal pauses scope s after an outcome that asks for a wait
// longer than RetryAfterHold.
func (e *Engine) observeRefusal(now time.Time, s int, o Outcome) {
	if o.Kind != Overloaded || o.RetryAfter <= e.scaled(RetryAfterHold) || e.scope(s) == nil {
		return
	}
	until := now.Add(e.BoundRetryAfter(s, o.RetryAfter))
	if until.After(e.paused[s]) {
		if !now.Before(e.paused[s]) {
			e.newlyPaused = append(e.newlyPaused, s)
		}
		e.paused[s] = until
	}
}

// isPaused reports whether scope s takes no new calls at now.
func (e *Engine) isPaused(now time.Time, s int) bool {
	return s >= 0 && s < len(e.paused) && now.Before(e.paused[s])
}

// settlePauses reacts to scopes paused since the last settle: their
// waiters move to a target that takes traffic, and those with none are
// refused now, told when the provider said to come back.
func (e *Engine) settlePauses(now time.Time, rd *Ready) {
	for len(e.newlyPaused) > 0 {
		s := e.newlyPaused[0]
		e.newlyPaused = e.newlyPaused[1:]
		e.reroute(now, s, rd)
		for _, q := range e.onScope(s, func(q *request) bool { return q.started.IsZero() }) {
			e.refuseWaiter(now, q, rd)
		}
	}
}
