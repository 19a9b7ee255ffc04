package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/admission"
)

// Answering early: a call that is slow on a provider whose breaker is
// open, with no target to move to, would otherwise sit out its whole
// deadline for an answer that will probably come too late, and the user
// learns nothing until then. Waiting helps nobody, so such a call is
// answered at once with 503/529 and a Retry-After (Ready.Abandon), and
// its upstream call is cancelled, once its provider more likely than not
// cannot meet its deadline.
//
// How slow the provider is now cannot be known until its slow calls
// return, which in a brownout is long after the users have gone. What is
// known is a lower bound: the oldest call in flight there, of age A, has
// not answered. With nothing else to go on, the Copernican argument
// (Gott's "delta t") says a wait that has lasted A is as likely to end
// before 2A as after it: P(latency > x | latency > A) = A/x. So a call
// with D between its start and its deadline is answered early once A
// exceeds D/2. A brownout of 30 s against a 15 s deadline answers the
// stranded calls 7.5 s after the oldest of them started, instead of
// timing them all out; a slowdown to 3 s never comes near. The cost is a
// provider whose latency lands between half and all of the deadline:
// calls it would have answered in time are answered early.
//
// Only a request with a deadline is judged. A probe, a call already
// answering, one with a second call, and one stranded waiting for room
// elsewhere are not.

// judgeReach answers q early if its provider can no longer meet its
// deadline, or arms a timer for when it will be judged again. q must be
// slow on a scope whose breaker is open.
func (e *Engine) judgeReach(now time.Time, q *request, rd *Ready) {
	e.abandonT.remove(q)
	sc := e.scope(q.scope)
	if sc == nil || sc.cfg.Breaker == nil || sc.cfg.Breaker.Weight(now) > 0 {
		return // healthy again: it gets the benefit of the doubt
	}
	if !e.rescuable(q) || q.stranded || q.req.Deadline.IsZero() || (q.hasTicket && q.ticket.Probe()) {
		return
	}
	if at := e.outOfReachAt(q); now.Before(at) {
		e.abandonT.push(q, at)
		return
	}
	q.expired = true // no second call from here on
	e.hedges.stats.Abandoned++
	rd.Abandon = append(rd.Abandon, admission.Refusal{Ticket: q.id, Priority: q.req.Priority,
		Reason: admission.ReasonTooSlow, RetryAfter: e.untilAvailable(now, q.req)})
}

// outOfReachAt is when q's provider becomes more likely than not to miss
// q's deadline: when the oldest unanswered call on q's scope has been in
// flight for half of q's start-to-deadline time. As calls answer, the
// oldest is younger and the moment later, so a timer armed for it never
// fires late; it is judged again when it fires.
func (e *Engine) outOfReachAt(q *request) time.Time {
	oldest := q.started
	for _, o := range e.reqs {
		if o.scope == q.scope && !o.started.IsZero() && !o.primaryDone && o.firstByte.IsZero() && o.started.Before(oldest) {
			oldest = o.started
		}
	}
	return oldest.Add(q.req.Deadline.Sub(q.started) / 2)
}
