package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// SecondCall asks the host to send a request's second call.
type SecondCall struct {
	ID ID
	// Target indexes the request's Targets.
	Target int
	// Kind says why: a hedge, or a rescue. Both race the first call. (A
	// retry comes from Engine.Retry, not in a Ready.)
	Kind SecondKind
}

// SecondKind is why a request got its second call.
type SecondKind uint8

const (
	// Hedge: the first call had no first byte by its hedge delay
	// (hedge.go); it is charged to the hedge budget.
	Hedge SecondKind = iota
	// Rescue: the first call is slow on a provider whose breaker is open
	// or recovering (rescue.go); no budget.
	Rescue
	// Retry: the first call failed safely (Engine.Retry); charged to the
	// failing provider's retry budget.
	Retry
	// FirstToken: the first call had no first token by its first-token
	// deadline (firsttoken.go); charged to the hedge budget, sent only to
	// another target.
	FirstToken
)

func (k SecondKind) String() string {
	switch k {
	case Rescue:
		return "rescue"
	case Retry:
		return "retry"
	case FirstToken:
		return "first_token"
	}
	return "hedge"
}

// SecondStats counts hedging decisions, for metrics.
type SecondStats struct {
	// Fired counts hedges sent; Won those whose answer the client got.
	Fired, Won uint64
	// NoBudget counts hedges the budget refused; NoTarget those with no
	// target that had room (or a breaker that would take a call).
	NoBudget, NoTarget uint64
	// Retries counts retries sent to another target; RetryNoBudget those
	// the retry budget refused.
	Retries, RetryNoBudget uint64
	// RetriesSame counts the retries (of Retries) sent to the same
	// target, charged to its retry budget; RetryNoTarget the retryable
	// failures that found no target to take a retry.
	RetriesSame, RetryNoTarget uint64
	// FirstToken counts second calls sent at a first-token deadline
	// (firsttoken.go).
	FirstToken uint64
	// Rescued counts second calls sent for slow calls stranded on a
	// provider whose breaker is open or recovering (rescue.go).
	Rescued uint64
	// Abandoned counts calls answered early: slow on a provider whose
	// breaker is open, with nowhere to go, and their deadline out of its
	// reach (abandon.go).
	Abandoned uint64
}

// secondCall is a request's second call.
type secondCall struct {
	scope, target int
	ticket        breaker.Ticket
	hasTicket     bool
	started       time.Time
	firstByte     time.Time
	live          bool
	// why: the rule that made it, for a retry (retry.go); zero for a
	// hedge or a rescue.
	why RetryWhy
}

// second sets up q's second call on the first target, after q's own in
// failover order (and then q's own, if sameOK), whose breaker takes
// traffic and whose provider has room. A target degraded by its evals
// is tried last, and only if degradedOK (evaldegraded.go).
func (e *Engine) second(now time.Time, q *request, sameOK, degradedOK bool) (int, bool) {
	ts := targets(q.req)
	deg := e.degradedTargets(q.req)
	order := make([]int, 0, len(ts))
	var last []int
	for i := q.target + 1; i < len(ts); i++ {
		if deg != nil && deg[i] {
			last = append(last, i)
			continue
		}
		order = append(order, i)
	}
	if sameOK {
		order = append(order, q.target)
	}
	if degradedOK {
		order = append(order, last...)
	}
	return e.secondOn(now, q, order)
}

// secondOn sets up q's second call on the first target of order that
// takes it (see second).
func (e *Engine) secondOn(now time.Time, q *request, order []int) (int, bool) {
	ts := targets(q.req)
	for _, i := range order {
		s := ts[i]
		if e.isPaused(now, s) && i != q.target {
			continue // asked for no calls for now
		}
		if e.books.targetWait(now, q.req, i) > 0 {
			continue // out of budget for now
		}
		h := &secondCall{scope: s, target: i, started: now, live: true}
		if sc := e.scope(s); sc != nil && sc.cfg.Breaker != nil && sc.cfg.Breaker.Weight(now) <= 0 {
			continue // open or probing: not a place for a second call
		}
		if !e.adm.Room(s) || e.poolOut(now, s) {
			continue
		}
		if sc := e.scope(s); sc != nil && sc.cfg.Breaker != nil {
			t, err := sc.cfg.Breaker.Allow(now)
			if err != nil {
				continue
			}
			h.ticket, h.hasTicket = t, true
		}
		e.adm.TakeExtra(s)
		q.chargedN[1] = e.books.charge(now, q.req, i)
		q.charged[1] = i + 1
		q.second = h
		e.pick(now, q, 1, s)
		return i, true
	}
	return 0, false
}

// Commit reports the first byte of one of a request's calls (attempt 0,
// the first call; 1, its hedge) and says whether that call's answer goes
// to the client: the first call to ask wins, and the host cancels the
// other. Nothing may be retried or hedged for the request after this.
func (e *Engine) Commit(now time.Time, id ID, attempt int) bool {
	q, ok := e.reqs.Get(id)
	if !ok {
		return false
	}
	if attempt == 0 {
		e.FirstByte(now, id)
	} else if q.second != nil && q.second.firstByte.IsZero() {
		q.second.firstByte = now
	}
	e.hedgeT.remove(q)
	e.abandonT.remove(q)
	if q.committed < 0 {
		q.committed = int8(attempt)
		if attempt == 1 {
			e.hedges.stats.Won++
		}
	}
	return int(q.committed) == attempt
}

// End reports how one of a request's calls ended: its first (attempt 0)
// or its second (attempt 1). Hosts report every call through it, so the
// difference between the two is the engine's alone.
func (e *Engine) End(now time.Time, id ID, attempt int, o Outcome) (Ready, bool) {
	if attempt == 0 {
		return e.Finish(now, id, o)
	}
	return e.FinishSecond(now, id, o)
}

// FinishSecond ends a request's hedge. Its breaker hears the outcome, its
// extra slot is released, and the request completes if its first call
// has already finished. ok is false if the request has no live hedge.
func (e *Engine) FinishSecond(now time.Time, id ID, o Outcome) (rd Ready, ok bool) {
	q, found := e.reqs.Get(id)
	if found && q.retired != nil {
		return e.endRetired(now, q, o), true
	}
	if !found || q.second == nil || !q.second.live {
		return rd, false
	}
	h := q.second
	h.live = false
	q.usage[1] = o
	e.observeRefusal(now, h.scope, o)
	e.settling(now, h.scope)
	e.heard(now, h.scope, h.started, h.firstByte, o)
	e.noteTTFT(h.scope, q.req.Stream, h.started, h.firstByte, o)
	sc := e.scopes[h.scope]
	if h.hasTicket {
		sc.cfg.Breaker.Done(now, h.ticket, breakerOutcome(e.signal(sc, q), h.started, h.firstByte, now, o, q.req.InvalidFails))
	}
	e.unpick(now, q, 1, h.scope, h.started, h.firstByte, o)
	// A trip by this outcome moves its provider's waiters before the
	// freed slot is handed out (see complete).
	e.settle(now, &rd)
	e.adm.FreeExtra(h.scope)
	e.pump(now, &rd)
	if q.primaryDone {
		rd.Merge(e.complete(now, q))
	}
	return rd, true
}

// SecondStats reports the hedging counters.
func (e *Engine) SecondStats() SecondStats { return e.hedges.stats }
