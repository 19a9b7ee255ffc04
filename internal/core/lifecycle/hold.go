package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// Holding for a probe's verdict. A provider probed synthetically (probe.go)
// takes no user request while its breaker is open or half-open. Refused
// at once, the users who arrive as it recovers would be lost: the first
// probe sent after the recovery answers a healthy latency later, and
// everyone who arrived in between was turned away from a provider that
// could have served them. So a request whose only way is such a provider
// waits, in the queue, for a verdict:
//
//   - a probe that passes starts the provider's fail-back, and the held
//     requests are routed again and start;
//   - a probe that fails refuses the held requests that arrived before
//     it was sent, with a Retry-After: they have seen a probe sent after
//     them fail. Those who arrived later wait for a later probe, so a
//     request that arrives after the provider recovered is never refused
//     on the word of a probe sent before.
//
// A hold lasts at most a probe interval plus a probe timeout (a second
// and a half with the defaults) and takes a place in the queue, so it is
// bounded like any wait. A request whose deadline would pass first, or
// that finds the queue full, is refused at once.

// holdable reports whether r may wait on scope s: its deadline leaves
// time for the next probe's verdict and a healthy call after it.
func (e *Engine) holdable(now time.Time, s int, r Request) bool {
	if r.Deadline.IsZero() {
		return true
	}
	b := e.scopes[s].cfg.Breaker
	next := now
	if st, _ := b.State(now); st == breaker.HalfOpen {
		if at, ok := b.NextProbe(); ok {
			next = at
		} else if at, ok := b.NextTimer(); ok {
			next = at // every probe slot taken: one frees at the earliest timeout
		}
	} else if at, ok := b.NextTimer(); ok {
		next = at // open until then
	}
	next = latest(next, now, e.probeWait[s])
	return r.Deadline.After(next.Add(b.ProbeTimeout() + b.SlowThreshold()))
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// syncHolds routes again the waiters of each synthetically probed scope
// whose breaker has just stopped or started taking traffic. At a trip,
// reroute has already moved the waiters that had somewhere else to go;
// the rest go through, if the provider can still answer them in time
// (reach.go), or are held for the verdict, their tickets handed back.
// When it takes traffic again, the held waiters are routed and start.
func (e *Engine) syncHolds(now time.Time, rd *Ready) {
	for s, sc := range e.scopes {
		if !sc.cfg.SyntheticProbes || sc.cfg.Breaker == nil {
			continue
		}
		out := sc.cfg.Breaker.Weight(now) <= 0
		if out == e.holding[s] {
			continue
		}
		e.holding[s] = out
		for _, q := range e.onScope(s, func(q *request) bool { return q.started.IsZero() && (out || q.held) }) {
			if p, ok := e.route(now, q.req); ok && (!p.held || e.holdable(now, p.scope, q.req)) {
				e.place(now, q, p)
			} else {
				e.refuseWaiter(now, q, rd)
			}
		}
		e.pump(now, rd)
	}
}

// refuseHeld refuses the requests held on scope s that arrived no later
// than a probe, sent at sent, that has just failed.
func (e *Engine) refuseHeld(now time.Time, s int, sent time.Time, rd *Ready) {
	for _, q := range e.onScope(s, func(q *request) bool { return q.held && !q.arrived.After(sent) }) {
		e.refuseWaiter(now, q, rd)
	}
}

// refuseWaiter refuses a waiting request because no target will take it
// now, telling it when one is likely to.
func (e *Engine) refuseWaiter(now time.Time, q *request, rd *Ready) {
	if !e.adm.Leave(now, q.id) {
		return
	}
	e.drop(now, q.id)
	rd.Refuse = append(rd.Refuse, admission.Refusal{Ticket: q.id, Priority: q.req.Priority,
		Reason: admission.ReasonUnavailable, RetryAfter: e.untilAvailable(now, q.req)})
}
