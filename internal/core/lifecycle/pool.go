package lifecycle

import (
	"maps"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/pool"
)

// A pooled provider (ScopeConfig.Pool) is one scope to admission and to
// routing: one limit (the sum of its replicas', pool.Pool.Limit), one
// place in a model's failover order. Which replica a call goes to is
// decided when the call starts, not when the request arrives, since a
// request may wait in the queue while the replicas' load moves: the
// first call's replica in start, a second call's in second. The host
// reads it with Replica. Each replica has its own breaker inside the
// pool; the scope itself has none, so a pool leaves rotation only when
// no replica can take a call (poolOut), and the breaker machinery built
// for a single provider (rescue, synthetic probes, hold) does not apply
// to it.

// poolLimiter lets admission read a pool's limit.
type poolLimiter struct{ p *pool.Pool }

func (l poolLimiter) Limit() int { return l.p.Limit() }

// minLimiter is the tighter of two limits (0 is unlimited): a pool's
// replicas' sum under an adaptive limit of its own.
type minLimiter struct{ a, b admission.Limiter }

func (l minLimiter) Limit() int {
	x, y := l.a.Limit(), l.b.Limit()
	switch {
	case x <= 0:
		return y
	case y <= 0:
		return x
	}
	return min(x, y)
}

// pool is scope s's replica pool, nil if it is not pooled.
func (e *Engine) pool(s int) *pool.Pool {
	if sc := e.scope(s); sc != nil {
		return sc.cfg.Pool
	}
	return nil
}

// poolOut reports that scope s is a pool with no replica taking calls.
func (e *Engine) poolOut(now time.Time, s int) bool {
	p := e.pool(s)
	return p != nil && !p.Available(now)
}

// pick chooses the replica for q's call (attempt 0 or 1) on scope s,
// if s is pooled. A second call on the pool its first went to goes to
// another replica when one can take it (pool.Pool.PickOther).
func (e *Engine) pick(now time.Time, q *request, attempt, s int) {
	p := e.pool(s)
	switch {
	case p == nil:
		return
	case attempt == 1 && s == q.scope:
		q.picks[1] = p.PickOther(now, q.picks[0].Replica)
	default:
		q.picks[attempt] = p.Pick(now)
	}
	q.picked[attempt] = true
}

// unpick reports the end of q's call (attempt) on scope s to its
// replica: its breaker hears the outcome by the scope's signal, and a
// success's latency joins the replica's average.
func (e *Engine) unpick(now time.Time, q *request, attempt, s int, started, firstByte time.Time, o Outcome) {
	if !q.picked[attempt] {
		return
	}
	q.picked[attempt] = false
	sc := e.scope(s)
	if sc == nil || sc.cfg.Pool == nil {
		return
	}
	bo := breakerOutcome(e.signal(sc, q), started, firstByte, now, o, q.req.InvalidFails)
	sc.cfg.Pool.Done(now, q.picks[attempt], bo, bo.Latency, o.Kind == OK)
}

// Replica is the replica of a pooled provider that a request's call
// (attempt 0, its first; 1, its second) was sent to, as an index into
// the provider's replicas. ok is false when the call has not started or
// its provider is not a pool.
func (e *Engine) Replica(id ID, attempt int) (int, bool) {
	q, found := e.reqs.Get(id)
	if !found || attempt < 0 || attempt > 1 || !q.picked[attempt] {
		return 0, false
	}
	return q.picks[attempt].Replica, true
}

// Observe records a scrape of a pooled provider's replica's metrics:
// scope s, replica i. A replica that was drained for stale metrics or
// for its queue may take calls again, so waiters that now fit start.
func (e *Engine) Observe(now time.Time, s, i int, l pool.Load) (rd Ready) {
	p := e.pool(s)
	if p == nil {
		return rd
	}
	p.Observe(now, i, l)
	e.settle(now, &rd)
	e.pump(now, &rd)
	return rd
}

// PoolStats reports scope s's replicas, nil if it is not pooled.
func (e *Engine) PoolStats(now time.Time, s int) []pool.Stat {
	if p := e.pool(s); p != nil {
		return p.Stats(now)
	}
	return nil
}

// poolTransitions drains the replicas' breaker transitions.
func (e *Engine) poolTransitions() []Transition {
	var out []Transition
	for s, sc := range e.scopes {
		if sc.cfg.Pool == nil {
			continue
		}
		// By replica, so the transitions come out in the same order on
		// every run, not in the map's.
		trs := sc.cfg.Pool.Transitions()
		for _, i := range slices.Sorted(maps.Keys(trs)) {
			for _, t := range trs[i] {
				out = append(out, Transition{Scope: s, Replica: i + 1, Transition: t})
			}
		}
	}
	return out
}

// poolEdge notices scope s's pool going out of rotation for time's
// sake (the last usable replica's metrics went stale) and moves its
// waiters on, as a trip would.
func (e *Engine) poolEdge(now time.Time, s int, rd *Ready) {
	p := e.pool(s)
	if p == nil {
		return
	}
	out := !p.Available(now)
	if out && !e.poolOutSeen[s] {
		e.reroute(now, s, rd)
	}
	e.poolOutSeen[s] = out
}

// replicaTripped reacts to a replica's breaker opening: when that took
// its pool's last replica out, the pool's waiters move on, as a
// provider's do when its breaker opens.
func (e *Engine) replicaTripped(now time.Time, t Transition, rd *Ready) {
	if t.To == breaker.Open && e.poolOut(now, t.Scope) {
		e.reroute(now, t.Scope, rd)
	}
}
