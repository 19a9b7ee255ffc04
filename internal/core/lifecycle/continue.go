package lifecycle

import "time"

// Continue decides whether request id's committed stream, broken by
// cause, is continued, and where (DecideContinue). caps is what each of
// the request's targets can do, in its targets' order (config); done,
// the continuations it has had; tool, whether the break came inside a
// tool call. The engine adds what only it knows: which targets can take
// a call now (breaker, pause, admission room), which share the broken
// call's provider, and that provider's retry budget, which a
// continuation on the same provider spends.
func (e *Engine) Continue(now time.Time, id ID, cause BreakCause, caps []ContinueCaps, done int, tool bool) Continuation {
	q, found := e.reqs.Get(id)
	if !found || q.committed < 0 {
		return DecideContinue(ContinueAsk{Cause: cause})
	}
	ts := targets(q.req)
	broken, current := q.scope, q.target
	if q.committed == 1 && q.second != nil {
		broken, current = q.second.scope, q.second.target
	}
	cands := make([]ContinueCandidate, len(ts))
	for i, s := range ts {
		c := ContinueCandidate{SameProvider: s == broken}
		if i < len(caps) {
			c.Caps = caps[i]
		}
		c.Healthy = !e.isPaused(now, s) && e.adm.Room(s)
		if sc := e.scope(s); sc != nil && sc.cfg.Breaker != nil && sc.cfg.Breaker.Weight(now) <= 0 {
			c.Healthy = false
		}
		cands[i] = c
	}
	sameBudget := broken >= 0 && broken < len(e.retries) && e.retries[broken].tokens >= 1
	d := DecideContinue(ContinueAsk{
		Cause: cause, Sent: true, Current: current, Candidates: cands,
		Done: done, SameBudget: sameBudget, Tool: tool,
	})
	if d.OK && cands[d.Target].SameProvider {
		e.retries[broken].tokens--
	}
	return d
}
