package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/breaker"
)

// Hedging: when a request's call has no first byte HedgeAfter after it
// started, the engine sends a second call (Ready.Hedge) to the request's
// next healthy target, or to the same one when it has no other, and the
// first call to produce a byte wins (Commit); the host cancels the other.
// A budget bounds hedges to a share of requests, so a brownout that makes
// every call slow cannot double the load on the providers.

// RetryConfig bounds retries, per provider: Budget and Burst as for
// hedges (default budget in config: 10% of requests). Base bounds the
// full-jitter backoff of a retry on the same provider that sent no
// Retry-After (a request is retried once, so there is no exponent).
type RetryConfig struct {
	Budget, Burst float64
	Base          time.Duration // default 100ms
}

// HedgeConfig bounds hedging across the engine.
type HedgeConfig struct {
	// Budget is the share of requests that may be hedged: every request
	// earns Budget of a hedge and every hedge spends one. Zero disables
	// hedging.
	Budget float64
	// Burst caps the hedges saved up in quiet times (default 10).
	Burst float64
}

// HedgeStart asks the host to send a request's second call.
type HedgeStart struct {
	ID ID
	// Target indexes the request's Targets.
	Target int
	// Rescue: the second call rescues a slow call stranded on a provider
	// whose breaker is open or recovering (rescue.go), rather than
	// hedging within the budget. It races the first call like a hedge.
	Rescue bool
}

// HedgeStats counts hedging decisions, for metrics.
type HedgeStats struct {
	// Fired counts hedges sent; Won those whose answer the client got.
	Fired, Won uint64
	// NoBudget counts hedges the budget refused; NoTarget those with no
	// target that had room (or a breaker that would take a call).
	NoBudget, NoTarget uint64
	// Retries counts retries sent to another target; RetryNoBudget those
	// the retry budget refused.
	Retries, RetryNoBudget uint64
	// Rescued counts second calls sent for slow calls stranded on a
	// provider whose breaker is open or recovering (rescue.go).
	Rescued uint64
}

type budget struct {
	cfg    HedgeConfig
	tokens float64
	stats  HedgeStats
}

// newBudget starts full, as token buckets do: the burst is there
// for the first trouble, and is earned back at Budget per request.
func newBudget(c HedgeConfig) budget {
	if c.Burst <= 0 {
		c.Burst = 10
	}
	b := budget{cfg: c}
	if b.enabled() {
		b.tokens = c.Burst
	}
	return b
}

func (b *budget) enabled() bool { return b.cfg.Budget > 0 }

// earn credits one request's share of a hedge.
func (b *budget) earn() {
	if b.enabled() {
		b.tokens = min(b.cfg.Burst, b.tokens+b.cfg.Budget)
	}
}

// hedgeCall is a request's second call.
type hedgeCall struct {
	scope, target int
	ticket        breaker.Ticket
	hasTicket     bool
	started       time.Time
	firstByte     time.Time
	live          bool
}

// hedgeDelay is how long q's first call may go without a first byte
// before it is hedged; zero for no hedge.
func (e *Engine) hedgeDelay(q *request) time.Duration {
	if !q.req.HedgeAtP95 {
		return q.req.HedgeAfter
	}
	if sc := e.scope(q.scope); sc != nil && sc.cfg.Breaker != nil {
		if p95, ok := sc.cfg.Breaker.HealthyP95(); ok {
			return p95
		}
	}
	return 0
}

// fireHedge sends q's hedge if the budget and a target allow.
func (e *Engine) fireHedge(now time.Time, q *request, rd *Ready) {
	if q.hedge != nil || q.primaryDone || q.expired || q.committed >= 0 || !q.firstByte.IsZero() {
		return
	}
	if e.hedges.tokens < 1 {
		e.hedges.stats.NoBudget++
		return
	}
	// The next targets in failover order first, then the same one: a
	// thin tail on a healthy provider is worth a second try there too.
	if i, ok := e.second(now, q, true); ok {
		e.hedges.tokens--
		e.hedges.stats.Fired++
		rd.Hedge = append(rd.Hedge, HedgeStart{ID: q.id, Target: i})
		return
	}
	e.hedges.stats.NoTarget++
}

// Retry decides whether a request whose first call failed with o, before
// any byte reached the client, gets a second call: only for a failure
// that is safe to retry (a connection error, 429, 5xx or 529), at most
// once, and within the failing provider's retry budget (retries of a
// provider's failures stay a share of the requests sent to it). The
// second call goes to the next of the request's targets that can take
// it, at once; failing that, to the same provider after delay: the
// provider's own Retry-After when it sent one of at most RetryAfterHold,
// else a full-jitter backoff, and only if the request's deadline leaves
// room. A longer Retry-After pauses the provider instead (pause.go). On success
// the second call is set up as attempt 1, like a hedge: the host sends
// it after delay and ends it with FinishHedge.
func (e *Engine) Retry(now time.Time, id ID, o Outcome) (target int, delay time.Duration, ok bool) {
	q, found := e.reqs[id]
	if !found || q.hedge != nil || q.expired || q.committed >= 0 || !retryable(o) {
		return 0, 0, false
	}
	if q.scope < 0 || q.scope >= len(e.retries) {
		return 0, 0, false
	}
	e.observeRefusal(now, q.scope, o)
	b := &e.retries[q.scope]
	if b.tokens < 1 {
		e.hedges.stats.RetryNoBudget++
		return 0, 0, false
	}
	// The wait a retry on the same provider would need, decided first so
	// that a retry the deadline cannot fit is never set up. A provider
	// that asks for more than RetryAfterHold is not waited for (pause.go).
	wait := o.RetryAfter
	if wait <= 0 {
		wait = time.Duration(e.rng.Int64N(int64(e.retryCfg.Base) + 1))
	}
	sameFits := wait <= RetryAfterHold && (q.req.Deadline.IsZero() || now.Add(wait).Before(q.req.Deadline))
	i, ok := e.second(now, q, sameFits)
	if !ok {
		return 0, 0, false
	}
	if i == q.target {
		delay = wait
		q.hedge.started = now.Add(delay) // the call starts after the wait
	}
	b.tokens--
	e.hedges.stats.Retries++
	return i, delay, true
}

// retryable: failures that leave nothing behind at the provider worth
// keeping and say nothing about the request itself.
func retryable(o Outcome) bool {
	switch o.Kind {
	case ConnError, Overloaded:
		return true
	case Failed:
		return o.Status >= 500
	}
	return false
}

// second sets up q's second call on the first target, after q's own in
// failover order (and then q's own, if sameOK), whose breaker takes
// traffic and whose provider has room.
func (e *Engine) second(now time.Time, q *request, sameOK bool) (int, bool) {
	ts := targets(q.req)
	order := make([]int, 0, len(ts))
	for i := q.target + 1; i < len(ts); i++ {
		order = append(order, i)
	}
	if sameOK {
		order = append(order, q.target)
	}
	for _, i := range order {
		s := ts[i]
		if e.isPaused(now, s) && i != q.target {
			continue // asked for no calls for now
		}
		h := &hedgeCall{scope: s, target: i, started: now, live: true}
		if sc := e.scope(s); sc != nil && sc.cfg.Breaker != nil {
			if sc.cfg.Breaker.Weight(now) <= 0 {
				continue // open or probing: not a place for a second call
			}
			t, err := sc.cfg.Breaker.Allow(now)
			if err != nil {
				continue
			}
			h.ticket, h.hasTicket = t, true
		}
		if !e.adm.TakeExtra(s) {
			if h.hasTicket {
				e.scopes[s].cfg.Breaker.Done(now, h.ticket, breaker.Outcome{Kind: breaker.Cancelled})
			}
			continue
		}
		q.hedge = h
		return i, true
	}
	return 0, false
}

// Commit reports the first byte of one of a request's calls (attempt 0,
// the first call; 1, its hedge) and says whether that call's answer goes
// to the client: the first call to ask wins, and the host cancels the
// other. Nothing may be retried or hedged for the request after this.
func (e *Engine) Commit(now time.Time, id ID, attempt int) bool {
	q, ok := e.reqs[id]
	if !ok {
		return false
	}
	if attempt == 0 {
		e.FirstByte(now, id)
	} else if q.hedge != nil && q.hedge.firstByte.IsZero() {
		q.hedge.firstByte = now
	}
	e.hedgeT.remove(q)
	if q.committed < 0 {
		q.committed = int8(attempt)
		if attempt == 1 {
			e.hedges.stats.Won++
		}
	}
	return int(q.committed) == attempt
}

// FinishHedge ends a request's hedge. Its breaker hears the outcome, its
// extra slot is released, and the request completes if its first call
// has already finished. ok is false if the request has no live hedge.
func (e *Engine) FinishHedge(now time.Time, id ID, o Outcome) (rd Ready, ok bool) {
	q, found := e.reqs[id]
	if !found || q.hedge == nil || !q.hedge.live {
		return rd, false
	}
	h := q.hedge
	h.live = false
	e.observeRefusal(now, h.scope, o)
	sc := e.scopes[h.scope]
	if h.hasTicket {
		sc.cfg.Breaker.Done(now, h.ticket, breakerOutcome(e.signal(sc, q), h.started, h.firstByte, now, o))
	}
	// A trip by this outcome moves its provider's waiters before the
	// freed slot is handed out (see complete).
	e.settle(now, &rd)
	rd.Start = append(rd.Start, e.started(now, e.adm.ReleaseExtra(now, h.scope))...)
	if q.primaryDone {
		rd.Merge(e.complete(now, q))
	}
	return rd, true
}

// HedgeStats reports the hedging counters.
func (e *Engine) HedgeStats() HedgeStats { return e.hedges.stats }
