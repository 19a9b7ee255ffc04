package lifecycle

import "time"

// TickAhead fires the deadlines and slow flags due by now of the requests
// admitted before id (tickets are issued in arrival order), as Tick fires
// them, and leaves the rest for Tick. A host that settles the calls of
// one instant one at a time in arrival order, as seed 000's tick loop
// does (answered, timed out or flagged slow, call by call), calls it
// before it finishes each call of the instant, then Tick for the rest;
// a limit then sees the slow flags and the answers in the same order as
// the seed's. The gateway never needs it: its timers and answers do not
// share instants.
func (e *Engine) TickAhead(now time.Time, id ID) Ready {
	var rd Ready
	for _, q := range e.dueAhead(&e.dead, now, id) {
		e.expire(now, q, &rd)
	}
	moved := false
	for _, q := range e.dueAhead(&e.slow, now, id) {
		moved = e.turnSlow(now, q, &rd) || moved
	}
	for _, q := range e.dueAhead(&e.dropT, now, id) {
		if !q.expired {
			moved = e.dropped(now, e.scopes[q.scope], q) || moved
		}
	}
	if moved {
		e.settle(now, &rd)
		e.pump(now, &rd)
	}
	e.settle(now, &rd)
	return rd
}

// dueAhead disarms and returns, in the heap's order, h's timers due by
// now whose requests were admitted before id.
func (e *Engine) dueAhead(h *timerHeap, now time.Time, id ID) []*request {
	var out, later []*request
	for h.due(now) {
		q := h.pop()
		if q.id < id {
			out = append(out, q)
		} else {
			later = append(later, q)
		}
	}
	for _, q := range later {
		h.push(q, q.timerAt[h.kind])
	}
	return out
}
