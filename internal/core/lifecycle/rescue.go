package lifecycle

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
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
// A call is offered a rescue when the breaker trips, if it is slow by
// then, or else when it is flagged slow. If the next target takes
// traffic but has no room at that moment, the call is stranded: it waits
// for room, and whenever room frees anywhere the stranded calls are
// placed before the queue's waiters, least deadline left first, since
// they have waited longest and have least time to spare. A call with no
// target to move to at all may be answered early instead (abandon.go).
// A request already hedged, or with a byte on its way to the client, is
// not rescued.

// settle drains the breakers' transitions into rd and reacts to them:
// the calls stranded by a trip are rescued, and a half-open breaker with
// synthetic probes gets its probes (probe.go). A rescue or a probe can
// itself move a breaker, so it settles again until nothing changes.
func (e *Engine) settle(now time.Time, rd *Ready) {
	for range 4 { // a fixed point comes in one or two rounds
		ts := e.transitions()
		rd.Transitions = append(rd.Transitions, ts...)
		for _, t := range ts {
			if t.Replica > 0 {
				e.replicaTripped(now, t, rd)
				continue
			}
			switch t.To {
			case breaker.Open:
				e.outOfRotation(t.Scope, true, t.Reason)
				e.reroute(now, t.Scope, rd)
				e.tripped(now, t.Scope, rd)
			case breaker.Recovering, breaker.Closed:
				e.outOfRotation(t.Scope, false, t.Reason)
			}
		}
		e.syncHolds(now, rd)
		e.settlePauses(now, rd)
		e.sendProbes(now, rd)
		if len(ts) == 0 {
			return
		}
		// A target that recovered may take the stranded calls.
		e.rescueStranded(now, rd)
	}
}

// tripped reacts to scope s's breaker opening: every slow call in flight
// there is rescued, stranded or judged (abandon.go), oldest request first
// (the order is the request IDs', so a simulation replays).
func (e *Engine) tripped(now time.Time, s int, rd *Ready) {
	sc := e.scopes[s]
	for _, q := range e.onScope(s, func(q *request) bool { return q.slow && e.rescuable(q) }) {
		e.onSlow(now, q, sc, rd)
	}
	// Requests rescued or hedged onto s, now out of rotation too, may be
	// out of reach everywhere.
	for _, q := range e.requests(func(q *request) bool { return q.second != nil && q.second.live && q.second.scope == s }) {
		e.judgeReach(now, q, rd)
	}
}

// onScope lists the requests routed to scope s that match keep, oldest
// first: a trip's reactions take them in request order, so a simulation
// replays exactly (the map's own order is random).
func (e *Engine) onScope(s int, keep func(*request) bool) []*request {
	return e.requests(func(q *request) bool { return q.scope == s && keep(q) })
}

// requests lists the requests that match keep, oldest first.
func (e *Engine) requests(keep func(*request) bool) []*request {
	var out []*request
	for _, q := range e.reqs.All {
		if keep(q) {
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

// onSlow reacts to q being slow on its scope while the scope's breaker
// is open, or recovering: a provider on probation gets no benefit of the
// doubt, and its share of traffic bounds the rescues. q is rescued or
// stranded; or, with nowhere to go while the provider is out of
// rotation, judged on whether it can still be answered in time.
func (e *Engine) onSlow(now time.Time, q *request, sc *scope, rd *Ready) {
	w := sc.cfg.Breaker.Weight(now)
	if w >= 1 || !e.rescuable(q) {
		return
	}
	if sc.cfg.Rescue && e.rescue(now, q, rd) || q.stranded {
		return
	}
	if w <= 0 {
		e.judgeReach(now, q, rd)
	}
}

// rescue sends q's second call to its next healthy target with room, or
// strands q to wait for room on one that takes traffic.
func (e *Engine) rescue(now time.Time, q *request, rd *Ready) bool {
	if !e.rescuable(q) {
		return false
	}
	i, ok := e.second(now, q, false, false)
	if !ok {
		if !q.stranded && e.canMove(now, q) {
			q.stranded = true
			e.stranded = append(e.stranded, q)
		}
		return false
	}
	e.sendRescue(q, i, rd)
	return true
}

func (e *Engine) sendRescue(q *request, target int, rd *Ready) {
	e.hedgeT.remove(q)
	e.abandonT.remove(q)
	e.hedges.stats.Rescued++
	rd.Second = append(rd.Second, SecondCall{ID: q.id, Target: target, Kind: Rescue})
}

// canMove reports whether a target after q's own takes traffic now,
// room or not.
func (e *Engine) canMove(now time.Time, q *request) bool {
	ts := targets(q.req)
	deg := e.degradedTargets(q.req)
	for i := q.target + 1; i < len(ts); i++ {
		s := ts[i]
		if e.isPaused(now, s) || (deg != nil && deg[i]) {
			continue
		}
		if sc := e.scope(s); sc == nil || sc.cfg.Breaker == nil || sc.cfg.Breaker.Weight(now) > 0 {
			return true
		}
	}
	return false
}

// rescueStranded places the stranded calls that now have room, least
// deadline left first (no deadline last; ties by request, so a
// simulation replays). A call that has ended, been answered, or whose
// provider is healthy again leaves the list.
func (e *Engine) rescueStranded(now time.Time, rd *Ready) {
	if len(e.stranded) == 0 {
		return
	}
	slices.SortFunc(e.stranded, func(a, b *request) int {
		da, db := a.req.Deadline, b.req.Deadline
		switch {
		case da.Equal(db):
			return cmp.Compare(a.id, b.id)
		case da.IsZero():
			return 1
		case db.IsZero():
			return -1
		}
		return da.Compare(db)
	})
	keep := e.stranded[:0]
	for _, q := range e.stranded {
		q.stranded = false
		if !e.holds(q) || !e.rescuable(q) || e.scopes[q.scope].cfg.Breaker.Weight(now) >= 1 {
			continue
		}
		if i, ok := e.second(now, q, false, false); ok {
			e.sendRescue(q, i, rd)
			continue
		}
		if !e.canMove(now, q) {
			// Its last way out closed: judge it like any call with
			// nowhere to go.
			e.judgeReach(now, q, rd)
			continue
		}
		q.stranded = true
		keep = append(keep, q)
	}
	clear(e.stranded[len(keep):])
	e.stranded = keep
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
		p, ok := e.route(now, q.req)
		if !ok || p.scope == s {
			if ok && p.hasTicket {
				e.scopes[p.scope].cfg.Breaker.Done(now, p.ticket, breaker.Outcome{Kind: breaker.Cancelled})
			}
			continue
		}
		e.place(now, q, p)
		moved = true
	}
	if moved {
		e.pump(now, rd)
	}
}
