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
// could have served them. Held until a probe decides, everyone who
// arrives while it is out waits to be told no, and that is most of them:
// saying no early is the first rule. So a request whose only way is such
// a provider waits, in the queue, for one verdict, and only when that
// verdict is due well within its patience:
//
//   - Its patience is the hold budget (Config.HoldBudget, a second by
//     default), less when its own deadline leaves less: the verdict and a
//     healthy call after it must both fit before the deadline. A client's
//     deadline is how long it waits for an answer, not how long it wants
//     to wait to be refused, so a long deadline does not lengthen it.
//   - A verdict is due when a healthy provider would have answered its
//     probe: the probe's send time plus a healthy probe's latency (the
//     last passing probe's, or, before any has passed, the provider's
//     healthy p95), a tenth more for jitter, and never later than
//     the probe's deadline (send time plus its timeout). That is
//     the choice between the two verdicts. A passing probe answers in a
//     healthy probe's time; a failing one, in a brownout, only at its
//     deadline, when the breaker counts it slow. Holding a user to a
//     failing probe's deadline is what made refusals take seconds; the
//     pass is the only verdict worth waiting for, and a probe still
//     unanswered past a healthy probe's time is, for the user, a
//     failing one, though the breaker waits out its timeout before it
//     says so. With nothing known of the provider's health, the
//     deadline is all there is.
//   - The verdict a request waits for is the first one due after it
//     arrives: a probe in flight whose pass is not yet overdue, or the
//     next probe (its send time: the breaker's next probe, a free slot
//     once a probe in flight times out, or the provider's own
//     Retry-After after a 429). A request is held only if that verdict
//     is due within its patience; otherwise it is refused at once, with
//     a Retry-After that names the next verdict due.
//
// A held request starts the moment a probe passes (the provider's
// fail-back begins, and held requests are routed again); it is refused,
// with a Retry-After naming the next verdict, once the verdict it waited
// for is due and the provider is still out, or when a probe sent after
// it arrived fails. So no request waits longer than its patience to be
// told no, and each hold takes a place in the queue, bounded like any
// wait; a request that finds the queue full is refused at once.

// DefaultHoldBudget is Config.HoldBudget's default: a hold is worth one
// probe's pass, not more. A second covers a probe interval (500 ms by
// default) plus a fast provider's one-token probe, which is what serves
// the users who arrive as a provider recovers, and it is the bound a
// user refused in an outage waits for the refusal. A longer budget lets
// requests wait for verdicts due later, such as a probe's timeout while
// nothing is known of the provider's health, and refusals then take
// that long; a shorter one holds nobody for a provider whose probes
// take longer, and loses the users who arrive as it recovers.
const DefaultHoldBudget = time.Second

// holds is what the engine keeps for holding (hold.go).
type holds struct {
	// budget is Config.HoldBudget, resolved: below zero, nobody is held.
	budget time.Duration
	// passed: per scope, the latency of the last probe that passed.
	passed []time.Duration
	// ends holds the held requests by when their verdict is due.
	ends timerHeap
}

func newHolds(cfg Config, e *Engine) holds {
	h := holds{budget: cfg.HoldBudget, passed: make([]time.Duration, len(cfg.Scopes))}
	if h.budget == 0 {
		h.budget = e.scaled(DefaultHoldBudget)
	}
	h.ends.kind = holdTimer
	return h
}

// holdable reports whether r may be held on scope s, and until when: the
// first verdict due after now, if it is due within r's patience.
func (e *Engine) holdable(now time.Time, s int, r Request) (time.Time, bool) {
	due, ok := e.verdictDue(now, s)
	if !ok || e.hold.budget < 0 || due.Sub(now) > e.hold.budget {
		return time.Time{}, false
	}
	if !r.Deadline.IsZero() && !r.Deadline.After(due.Add(e.scopes[s].cfg.Breaker.SlowThreshold())) {
		return time.Time{}, false // no time for a healthy call after the verdict
	}
	return due, true
}

// verdictDue is when the first verdict on synthetically probed scope s
// falls due after now: a probe in flight's, or the next probe's.
func (e *Engine) verdictDue(now time.Time, s int) (time.Time, bool) {
	sc := e.scope(s)
	if sc == nil || !sc.cfg.SyntheticProbes || sc.cfg.Breaker == nil {
		return time.Time{}, false
	}
	pass := e.passTime(s)
	due := e.nextProbeAt(now, s).Add(pass)
	for _, p := range e.probes {
		if d := p.started.Add(pass); p.scope == s && d.After(now) && d.Before(due) {
			due = d
		}
	}
	return due, true
}

// nextProbeAt is when scope s's breaker will next grant a synthetic
// probe, as of now: at once while it has a probe to give, one interval
// after the last while it trickles, when a probe in flight times out
// while every slot is taken, at the end of the open time while open,
// and never before the provider's own Retry-After (probeWait).
func (e *Engine) nextProbeAt(now time.Time, s int) time.Time {
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
	return latest(next, now, e.probeWait[s])
}

// passTime is how long after its send a probe to scope s that passes is
// expected to have answered: a healthy probe's latency and a tenth, at
// most the probe timeout (see above).
func (e *Engine) passTime(s int) time.Duration {
	b := e.scopes[s].cfg.Breaker
	timeout := b.ProbeTimeout()
	h := e.hold.passed[s]
	if h <= 0 {
		p95, ok := b.HealthyP95()
		if !ok || p95 <= 0 {
			return timeout
		}
		h = p95
	}
	return min(timeout, h+h/10)
}

// passed records a probe to scope s that passed after lat.
func (e *Engine) probePassed(s int, lat time.Duration) {
	if lat > 0 {
		e.hold.passed[s] = lat
	}
}

// armHold holds q until end, when its verdict is due.
func (e *Engine) armHold(q *request, end time.Time) {
	e.hold.ends.remove(q)
	e.hold.ends.push(q, end)
}

// holdEnded: the verdict q was held for is due. If its provider is still
// out of rotation, q is refused; a passing verdict would have routed it
// already (syncHolds).
func (e *Engine) holdEnded(now time.Time, q *request, rd *Ready) {
	if !e.holds(q) || !q.held || !q.started.IsZero() {
		return
	}
	e.refuseWaiter(now, q, rd)
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
// (reach.go), are held for a verdict due within their patience, their
// tickets handed back, or are refused. When it takes traffic again, the
// held waiters are routed and start.
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
			p, ok := e.route(now, q.req)
			var end time.Time
			if ok && p.held {
				end, ok = e.holdable(now, p.scope, q.req)
			}
			if !ok {
				e.refuseWaiter(now, q, rd)
				continue
			}
			e.place(now, q, p)
			if p.held {
				e.armHold(q, end)
			} else {
				e.hold.ends.remove(q)
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
	e.hold.ends.remove(q)
	e.drop(now, q.id)
	rd.Refuse = append(rd.Refuse, admission.Refusal{Ticket: q.id, Priority: q.req.Priority,
		Reason: admission.ReasonUnavailable, RetryAfter: e.untilAvailable(now, q.req)})
}
