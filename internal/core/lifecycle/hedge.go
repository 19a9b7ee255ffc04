package lifecycle

import "time"

// Hedging: when a request's call has no first byte HedgeAfter after it
// started, the engine sends a second call (Ready.Second) to the request's
// next healthy target, or to the same one when it has no other, and the
// first call to produce a byte wins (Commit); the host cancels the other.
// A budget bounds hedges to a share of requests, so a brownout that makes
// every call slow cannot double the load on the providers.

// HedgeConfig bounds hedging across the engine.
type HedgeConfig struct {
	// Budget is the share of requests that may be hedged: every request
	// earns Budget of a hedge and every hedge spends one. Zero disables
	// hedging.
	Budget float64
	// Burst caps the hedges saved up in quiet times (default 10).
	Burst float64
}

type budget struct {
	cfg    HedgeConfig
	tokens float64
	stats  SecondStats
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
	if q.firstTokenDue {
		e.fireFirstToken(now, q, rd)
		return
	}
	if q.second != nil || q.primaryDone || q.expired || q.committed >= 0 || !q.firstByte.IsZero() {
		return
	}
	if !e.hedges.has() {
		e.hedges.stats.NoBudget++
		return
	}
	// The next targets in failover order first, then the same one: a
	// thin tail on a healthy provider is worth a second try there too.
	if i, ok := e.second(now, q, true, false); ok {
		e.hedges.tokens--
		e.hedges.stats.Fired++
		rd.Second = append(rd.Second, SecondCall{ID: q.id, Target: i, Kind: Hedge})
		return
	}
	e.hedges.stats.NoTarget++
}
