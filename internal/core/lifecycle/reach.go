package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// Reach: whether a provider whose breaker is open for slowness can still
// answer a request before its deadline. A breaker trips on calls slower
// than the provider's own healthy latency, which is the right test for
// failing over to a faster target; with no target to go to, it is the
// wrong test for refusing users. A provider three times slower than usual
// still answers a user who waits fifteen seconds. So with every target
// out of rotation, the engine asks what a call started now would take,
// from what the provider's calls show. The latency L of the last call
// that answered there (at least the breaker's slow threshold, which its
// calls have been passing) is the estimate, unless the oldest call still
// unanswered there has already waited A > L: then the provider is slower
// than its last answer showed, by an excess that has lasted A - L so
// far, and the estimate is L + 2(A - L). Until a call answers again, A
// is at least the age at which calls were answered early for being out
// of reach (below).
//
// The doubling is the Copernican argument (Gott's "delta t"): with
// nothing else to go on, a wait that has lasted a is as likely to end
// before 2a as after it, P(wait > x | wait > a) = a/x. Applied to the
// excess alone, a slow ramp, whose every call waits a little longer than
// the last answer took, is estimated at about its latency, and a step,
// whose calls all go unanswered, at about twice their age. A request
// whose time left exceeds the estimate, and for which the provider has a
// slot free now, is served through the open breaker, without a ticket
// (it neither counts for nor against the provider: the probes decide its
// recovery); otherwise it waits for a synthetic probe's verdict, if one
// is due within its patience (hold.go), or is refused. A breaker open for
// errors passes nothing through: a failing provider is refused, not
// reached.
//
// Answering early: a call already in flight on a provider out of
// rotation, past its slow threshold, with no target to move to, is
// answered at once with 503/529 and a Retry-After (Ready.Abandon), and
// its upstream call cancelled, once its provider more likely than not
// cannot meet its deadline: once the estimate, as of now, exceeds the
// call's start-to-deadline time. A step to 30 s calls against a 15 s
// deadline answers the stranded calls 7.5 s after the oldest of them
// started, instead of timing them all out; a slowdown to 3 s, or a ramp
// whose answers keep coming in time, never comes near. The cost is a
// step to a latency between half and all of a deadline, with no answer
// yet to show it: calls it would have answered in time are answered
// early. Only a request with a deadline is judged; a probe, a call
// already answering, one with a second call, and one stranded waiting
// for room elsewhere are not.

// reachable picks, for a request all of whose targets are out of
// rotation, the target whose provider is likeliest to answer it in time,
// if the request's time left exceeds that provider's estimate. Only a
// provider with a slot free now is a candidate: a request does not queue
// for a provider out of rotation, since its slots free only as its slow
// calls end, seconds away at best, and a user who waited for one would
// most likely be answered early, or refused, after the wait (hold.go:
// say no early).
func (e *Engine) reachable(now time.Time, r Request, skip func(int) bool) (int, bool) {
	if r.Deadline.IsZero() {
		return 0, false
	}
	best, bestEst := -1, time.Duration(0)
	for i, s := range targets(r) {
		sc := e.scope(s)
		if sc == nil || sc.cfg.Breaker == nil || e.closed(now, r, i) || !sc.outForSlowness || (skip != nil && skip(i)) || !e.adm.Room(s) {
			continue
		}
		if est := e.latencyEstimate(now, s); best < 0 || est < bestEst {
			best, bestEst = i, est
		}
	}
	return best, best >= 0 && bestEst < r.Deadline.Sub(now)
}

// latencyEstimate is what a call started now on scope s would take, as
// far as its calls show (see above). One instant's arrivals share it.
func (e *Engine) latencyEstimate(now time.Time, s int) time.Duration {
	sc := e.scopes[s]
	if !now.Equal(sc.estAt) {
		sc.estAt, sc.est = now, sc.estimate(now.Sub(e.oldestUnanswered(s, now)))
	}
	return sc.est
}

// estimate is the latency estimate given the age of the oldest call
// still unanswered (see above).
func (sc *scope) estimate(oldest time.Duration) time.Duration {
	last := sc.lastAnswer()
	if a := max(sc.floor, oldest); a > last {
		return 2*a - last
	}
	return last
}

// lastAnswer is the latency of the last call that answered, and at
// least the breaker's slow threshold: open for slowness, its calls take
// that long.
func (sc *scope) lastAnswer() time.Duration {
	return max(sc.latest, sc.cfg.Breaker.SlowThreshold())
}

// oldestUnanswered is when the oldest first call in flight on scope s
// with nothing answered yet started; now if there is none.
func (e *Engine) oldestUnanswered(s int, now time.Time) time.Time {
	oldest := now
	for _, o := range e.reqs.All {
		if o.scope == s && !o.started.IsZero() && !o.primaryDone && o.firstByte.IsZero() && o.started.Before(oldest) {
			oldest = o.started
		}
	}
	return oldest
}

// heard records how a call on scope s that started at started ended:
// an answer's latency (its first byte, when it streamed one) is the
// provider's latest; a failure while the provider is out of rotation
// means it is failing, not only slow.
func (e *Engine) heard(now time.Time, s int, started, firstByte time.Time, o Outcome) {
	sc := e.scope(s)
	if sc == nil || started.IsZero() {
		return
	}
	switch o.Kind {
	case OK:
		if firstByte.IsZero() {
			firstByte = now
		}
		sc.latest, sc.floor, sc.estAt = firstByte.Sub(started), 0, time.Time{}
	case Failed, ConnError:
		sc.outForSlowness = false
	}
}

// outOfRotation notes a scope's breaker opening (reason says why) or
// taking traffic again.
func (e *Engine) outOfRotation(s int, open bool, reason breaker.Reason) {
	sc := e.scopes[s]
	sc.outForSlowness = open && reason != breaker.ReasonErrorRate && reason != breaker.ReasonConsecutiveErrors && reason != breaker.ReasonProbeError
	if !open {
		sc.floor, sc.estAt = 0, time.Time{}
	}
}

// judgeReach answers q early if it can no longer be answered before its
// deadline, or arms a timer for when it will be judged again. q is slow
// on a scope whose breaker is open, or has a second call on one too.
func (e *Engine) judgeReach(now time.Time, q *request, rd *Ready) {
	e.abandonT.remove(q)
	if !e.judgeable(now, q) {
		return
	}
	at, out := e.outOfReach(now, q.scope, q.started, q.req.Deadline)
	if h := q.second; h != nil && h.live {
		// Rescued or hedged onto a provider that has since browned out
		// too: the request is out of reach when both calls are.
		at2, out2 := e.outOfReach(now, h.scope, h.started, q.req.Deadline)
		at, out = latest(at, at2), out && out2
	}
	if !out && now.Before(at) {
		// As calls answer, the oldest is younger and that moment later,
		// so the timer never fires late; it is judged again then.
		e.abandonT.push(q, at)
		return
	}
	sc := e.scopes[q.scope]
	sc.floor, sc.estAt = max(sc.floor, now.Sub(e.oldestUnanswered(q.scope, q.started))), time.Time{}
	if q.second == nil && e.rescuable(q) && e.degradedTargets(q.req) != nil {
		// Out of reach here, but a target its evals degraded can still
		// answer: a likely-wrong answer beats none (evaldegraded.go).
		if i, ok := e.second(now, q, false, true); ok {
			e.sendRescue(q, i, rd)
			return
		}
	}
	q.expired = true // no second call from here on
	e.hedges.stats.Abandoned++
	rd.Abandon = append(rd.Abandon, admission.Refusal{Ticket: q.id, Priority: q.req.Priority,
		Reason: admission.ReasonTooSlow, RetryAfter: e.untilAvailable(now, q.req)})
}

// judgeable: q has a deadline, nothing answered, and every call it has
// in flight is on a provider out of rotation; it is not a probe, and not
// stranded waiting for room elsewhere.
func (e *Engine) judgeable(now time.Time, q *request) bool {
	out := func(s int) bool {
		sc := e.scope(s)
		return sc != nil && sc.cfg.Breaker != nil && sc.cfg.Breaker.Weight(now) <= 0
	}
	if q.started.IsZero() || q.primaryDone || q.expired || q.committed >= 0 || !q.firstByte.IsZero() ||
		q.stranded || q.req.Deadline.IsZero() || (q.hasTicket && q.ticket.Probe()) || !out(q.scope) {
		return false
	}
	h := q.second
	return h == nil || !h.live || (h.firstByte.IsZero() && out(h.scope))
}

// outOfReach reports whether a call on scope s that started at started
// more likely than not misses deadline, and when it will if not yet:
// when the estimate L + 2(A - L) reaches the budget D, the oldest call
// having waited A = (D + L) / 2 (rounded up, so it has reached it, not
// fallen a nanosecond short).
func (e *Engine) outOfReach(now time.Time, s int, started, deadline time.Time) (time.Time, bool) {
	sc := e.scopes[s]
	oldest := e.oldestUnanswered(s, started)
	budget := deadline.Sub(started)
	at := oldest.Add((budget + sc.lastAnswer() + 1) / 2)
	return at, sc.estimate(now.Sub(oldest)) >= budget || !now.Before(at)
}
