package lifecycle

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/breaker"
)

// Rescue: the calls a provider took before its breaker tripped are the
// ones a brownout strands. Failover protects every request that arrives
// after the trip; without more, the calls already in flight sit out the
// slow provider's latency, and the client waits its full patience for
// them. So when a scope's breaker is open, each of its calls that is slow
// (flagged before the trip, or flagged later, or flagged while the scope
// is recovering at a fail-back step) gets a second call on the
// request's next target that can take it, racing the first exactly as a
// hedge does: whichever produces a byte first wins, and the other is
// cancelled.
//
// A rescue is not charged to the hedge budget. It needs no budget: while
// the breaker is open, which already stops new calls to the scope,
// rescues are bounded by the calls the scope had in flight, which its
// concurrency limit bounds; while it recovers, by the slow calls of its
// fail-back share; and each request has at most two calls.
//
// A call is offered a rescue once: when the breaker trips, if it is slow
// by then, or else when it is flagged slow. If no target has room at that
// moment, it stays where it is. A request already hedged, or with a byte
// on its way to the client, is not rescued.

// settle drains the breakers' transitions into rd and reacts to them:
// the calls stranded by a trip are rescued, and a half-open breaker with
// synthetic probes gets its probes (probe.go). A rescue or a probe can
// itself move a breaker, so it settles again until nothing changes.
func (e *Engine) settle(now time.Time, rd *Ready) {
	for range 4 { // a fixed point comes in one or two rounds
		ts := e.transitions()
		rd.Transitions = append(rd.Transitions, ts...)
		for _, t := range ts {
			if t.To == breaker.Open {
				e.reroute(now, t.Scope, rd)
				if e.scopes[t.Scope].cfg.Rescue {
					e.rescueScope(now, t.Scope, rd)
				}
			}
		}
		e.settlePauses(now, rd)
		e.sendProbes(now, rd)
		if len(ts) == 0 {
			return
		}
	}
}

// rescueScope rescues every slow call in flight on scope s, oldest
// request first (the order is the request IDs', so a simulation replays).
func (e *Engine) rescueScope(now time.Time, s int, rd *Ready) {
	for _, q := range e.onScope(s, func(q *request) bool { return q.slow && e.rescuable(q) }) {
		e.rescue(now, q, rd)
	}
}

// onScope lists the requests routed to scope s that match keep, oldest
// first: a trip's reactions take them in request order, so a simulation
// replays exactly (the map's own order is random).
func (e *Engine) onScope(s int, keep func(*request) bool) []*request {
	var out []*request
	for _, q := range e.reqs {
		if q.scope == s && keep(q) {
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b *request) int { return cmp.Compare(a.id, b.id) })
	return out
}

// rescuable: q's first call is in flight with nothing sent to the client,
// no second call, and time left.
func (e *Engine) rescuable(q *request) bool {
	return !q.started.IsZero() && !q.primaryDone && !q.expired && q.second == nil && q.committed < 0 && q.firstByte.IsZero()
}

// rescueSlow rescues q, just flagged slow, if its scope's breaker is
// open, or recovering: a provider on probation gets no benefit of the
// doubt, and its share of traffic bounds the rescues.
func (e *Engine) rescueSlow(now time.Time, q *request, sc *scope, rd *Ready) {
	if sc.cfg.Rescue && sc.cfg.Breaker != nil && sc.cfg.Breaker.Weight(now) < 1 {
		e.rescue(now, q, rd)
	}
}

// rescue sends q's second call to its next healthy target with room.
func (e *Engine) rescue(now time.Time, q *request, rd *Ready) bool {
	if !e.rescuable(q) {
		return false
	}
	i, ok := e.second(now, q, false)
	if !ok {
		return false
	}
	e.hedgeT.remove(q)
	e.hedges.stats.Rescued++
	rd.Second = append(rd.Second, SecondCall{ID: q.id, Target: i, Kind: Rescue})
	return true
}

// outliveProbe: q's call was a half-open probe, and the deadline that
// came due is the probe's own timeout, not the request's. The probe has
// failed, but its user need not fail with it: a request whose hedge is
// under way goes on in the hedge, and one whose scope rescues goes on in
// a rescue. Either keeps its own deadline.
func (e *Engine) outliveProbe(now time.Time, q *request, rd *Ready) bool {
	if !q.hasTicket || !q.ticket.Probe() {
		return false
	}
	if d := q.req.Deadline; !d.IsZero() && !now.Before(d) {
		return false
	}
	if q.second == nil || !q.second.live {
		if sc := e.scope(q.scope); !sc.cfg.Rescue || !e.rescue(now, q, rd) {
			return false
		}
	}
	if !q.req.Deadline.IsZero() {
		e.dead.push(q, q.req.Deadline)
	}
	return true
}

// reroute moves the requests waiting for scope s, whose breaker just
// opened, to the next of their targets that takes traffic, oldest first.
// Routed when they arrived, they would otherwise start on the provider
// that has just been judged unhealthy, the moment a slot there frees.
// They keep their place in the queue; those that now fit start.
func (e *Engine) reroute(now time.Time, s int, rd *Ready) {
	waiting := e.onScope(s, func(q *request) bool { return q.started.IsZero() && len(targets(q.req)) > 1 })
	moved := false
	for _, q := range waiting {
		target, scope, ticket, hasTicket, ok := e.route(now, q.req)
		if !ok || scope == s {
			if ok && hasTicket {
				e.scopes[scope].cfg.Breaker.Done(now, ticket, breaker.Outcome{Kind: breaker.Cancelled})
			}
			continue
		}
		if q.hasTicket {
			e.scopes[s].cfg.Breaker.Done(now, q.ticket, breaker.Outcome{Kind: breaker.Cancelled})
		}
		e.adm.Rescope(q.id, scope)
		q.target, q.scope, q.ticket, q.hasTicket = target, scope, ticket, hasTicket
		moved = true
	}
	if moved {
		rd.Start = append(rd.Start, e.started(now, e.adm.Pump(now))...)
	}
}
