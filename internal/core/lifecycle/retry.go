package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/pool"
)

// RetryConfig bounds retries, per provider: Budget and Burst as for
// hedges (default budget in config: 10% of requests). Base bounds the
// full-jitter backoff of a retry on the same provider that sent no
// Retry-After (a request is retried there once, so there is no
// exponent). WaitMax is the longest Retry-After waited out on the same
// provider (DefaultRetryWait when zero).
type RetryConfig struct {
	Budget, Burst float64
	Base          time.Duration // default 100ms
	WaitMax       time.Duration
}

// DefaultRetryWait is the longest Retry-After a request waits out on the
// provider that sent it. It covers the one- and two-second waits that
// per-second rate limits and short overloads ask for (a 429 with
// Retry-After: 2 keeps the model the client asked for), and it is about
// what a failover itself costs, one first token on another model: a
// longer wait is better spent on the next target.
const DefaultRetryWait = 3 * time.Second

// RetryWhy is the rule that gave a request its retry. Hosts show it
// (X-Sluice-Second-Call, the log); they never decide it.
type RetryWhy uint8

const (
	// RetryNext: the request moves to its next target that takes
	// traffic, at once. The call adds no load to the provider that
	// failed, so no retry budget pays for it: the other provider's own
	// admission bounds it.
	RetryNext RetryWhy = iota + 1
	// RetrySame: one more call on the same target, after a short
	// full-jitter backoff: a lone transient failure (a 5xx other than
	// 503/529, or a broken connection) on a provider whose breaker is
	// closed with no error before it, or no other target to go to.
	// Charged to the provider's retry budget; should it fail too, the
	// request moves to its next target (RetryNext).
	RetrySame
	// RetryWait: the same target after the provider's own Retry-After,
	// which was at most WaitMax and fits the request's deadline.
	// Charged to the provider's retry budget.
	RetryWait
)

func (w RetryWhy) String() string {
	switch w {
	case RetryNext:
		return "next"
	case RetrySame:
		return "same"
	case RetryWait:
		return "wait"
	}
	return "none"
}

// RetryChoice is Engine.RetryCall's answer: the target of the retry (an
// index into the request's Targets), how long the host waits before
// sending it, and the rule that chose it.
type RetryChoice struct {
	Target int
	Delay  time.Duration
	Why    RetryWhy
}

// budgetSlack: budgets earn fractions of a call (0.1 a request), and ten
// tenths add up to 0.9999999 in floating point, not 1; a budget holds a
// call when it is this close to a whole one.
const budgetSlack = 1e-9

// has reports whether the budget holds a whole call.
func (b *budget) has() bool { return b.tokens >= 1-budgetSlack }

// spend takes one call from the budget.
func (b *budget) spend() { b.tokens = max(0, b.tokens-1) }

// Retry is RetryCall without the rule's name.
func (e *Engine) Retry(now time.Time, id ID, o Outcome) (target int, delay time.Duration, ok bool) {
	c, ok := e.RetryCall(now, id, o)
	return c.Target, c.Delay, ok
}

// RetryCall decides whether a request whose call failed with o, before
// any byte reached the client, gets another call, where, and after how
// long. A host asks it for every call that failed and whose answer the
// client will not get, before it reports the call's End, and checks
// nothing first: the engine knows the request's calls.
//
// Only a failure that is safe to retry qualifies (a connection error,
// 429, 5xx or 529, or an answer that broke the request's declared
// schema), of the first call failing alone (while a hedge or rescue is
// live the answer may still come from it), or of a retry on the same
// target, which then moves to the next target. The rules, in order:
//
//  1. A Retry-After of at most WaitMax that fits the deadline is waited
//     out on the same target (RetryWait); a longer one sends the
//     request to its next target at once (RetryNext), and pauses the
//     provider (pause.go).
//  2. A lone transient failure, a 5xx other than 503/529 or a broken
//     connection, on a target whose breaker is closed and heard no
//     error before it, is retried once on the same target after a
//     short backoff (RetrySame): the client keeps the model it asked
//     for. A 503 or 529 says the provider is at capacity: another call
//     there would only add to it.
//  3. Otherwise the request moves to its next target that takes
//     traffic, at once (RetryNext), whatever the traffic rate; evals-
//     degraded targets come last.
//  4. With nowhere else to go, the same target after the backoff
//     (RetrySame), if the deadline leaves room.
//
// Same-target calls (1, 2, 4) are charged to the provider's retry
// budget, which bounds what a failing provider is sent again; a call to
// another provider is not, since it adds no load to the failing one.
// On success the new call is set up as attempt 1, like a hedge: the
// host sends it after Delay and ends it with End(…, 1, …).
func (e *Engine) RetryCall(now time.Time, id ID, o Outcome) (RetryChoice, bool) {
	q, found := e.reqs.Get(id)
	if !found || q.expired || q.committed >= 0 || !retryable(o) {
		return RetryChoice{}, false
	}
	if q.scope < 0 || q.scope >= len(e.retries) {
		return RetryChoice{}, false
	}
	if q.second != nil {
		return e.retryAfterSame(now, q, o)
	}
	e.observeRefusal(now, q.scope, o)
	b := &e.retries[q.scope]
	if w := o.RetryAfter; w > 0 {
		if w <= e.retryWait() && e.fits(now, q, w) && e.afford(b) {
			if c, ok := e.retryOn(now, q, []int{q.target}, w, RetryWait); ok {
				return c, true
			}
		}
		if i, ok := e.second(now, q, false, true); ok {
			return e.retryNext(q, i), true
		}
		return RetryChoice{}, false
	}
	backoff := time.Duration(e.rng.Int64N(int64(e.retryCfg.Base) + 1))
	same := e.fits(now, q, backoff)
	if same && e.lone(now, q.scope, o) && e.afford(b) {
		if c, ok := e.retryOn(now, q, []int{q.target}, backoff, RetrySame); ok {
			return c, true
		}
	}
	if i, ok := e.second(now, q, false, false); ok {
		return e.retryNext(q, i), true
	}
	if same && e.afford(b) {
		if c, ok := e.retryOn(now, q, []int{q.target}, backoff, RetrySame); ok {
			return c, true
		}
	}
	if i, ok := e.second(now, q, false, true); ok {
		return e.retryNext(q, i), true
	}
	e.hedges.stats.RetryNoTarget++
	return RetryChoice{}, false
}

// afford reports whether retry budget b holds a call, counting a refusal.
func (e *Engine) afford(b *budget) bool {
	if b.has() {
		return true
	}
	e.hedges.stats.RetryNoBudget++
	return false
}

// retryOn sets up a same-target retry, charged to the provider's retry
// budget, starting after delay.
func (e *Engine) retryOn(now time.Time, q *request, order []int, delay time.Duration, why RetryWhy) (RetryChoice, bool) {
	i, ok := e.secondOn(now, q, order)
	if !ok {
		return RetryChoice{}, false
	}
	e.retries[q.scope].spend()
	e.hedges.stats.Retries++
	e.hedges.stats.RetriesSame++
	q.second.started = now.Add(delay) // the call starts after the wait
	q.second.why = why
	return RetryChoice{Target: i, Delay: delay, Why: why}, true
}

// retryNext names a retry on another target, already set up: no budget.
func (e *Engine) retryNext(q *request, i int) RetryChoice {
	e.hedges.stats.Retries++
	q.second.why = RetryNext
	return RetryChoice{Target: i, Why: RetryNext}
}

// retryAfterSame: q has a second call. Only a same-target retry that
// failed earns another, on the next target, at once (the first call has
// ended, so the request has no other call live); the failed one is
// retired, to be ended by the host's End that follows.
func (e *Engine) retryAfterSame(now time.Time, q *request, o Outcome) (RetryChoice, bool) {
	old := q.second
	if !old.live || !q.primaryDone || q.retired != nil || (old.why != RetrySame && old.why != RetryWait) {
		return RetryChoice{}, false
	}
	e.observeRefusal(now, old.scope, o)
	r := &retiredCall{call: old, pick: q.picks[1], picked: q.picked[1], charged: q.charged[1], chargedN: q.chargedN[1]}
	q.second, q.picked[1] = nil, false
	i, ok := e.second(now, q, false, true)
	if !ok {
		q.second, q.picks[1], q.picked[1] = old, r.pick, r.picked
		q.charged[1], q.chargedN[1] = r.charged, r.chargedN
		return RetryChoice{}, false
	}
	q.retired = r
	return e.retryNext(q, i), true
}

// retiredCall is a failed same-target retry replaced by a call on the
// next target before its host reported its End (FinishSecond ends it).
type retiredCall struct {
	call     *secondCall
	pick     pool.Pick
	picked   bool
	charged  int
	chargedN int64
}

// endRetired ends q's retired call with o: its breaker, replica and
// budgets hear it, and its extra slot is freed; the request goes on in
// the call that replaced it.
func (e *Engine) endRetired(now time.Time, q *request, o Outcome) (rd Ready) {
	r := q.retired
	q.retired = nil
	h := r.call
	h.live = false
	e.settling(now, h.scope)
	e.heard(now, h.scope, h.started, h.firstByte, o)
	sc := e.scopes[h.scope]
	if h.hasTicket {
		sc.cfg.Breaker.Done(now, h.ticket, breakerOutcome(e.signal(sc, q), h.started, h.firstByte, now, o, q.req.InvalidFails))
	}
	if r.picked {
		pick, picked := q.picks[1], q.picked[1]
		q.picks[1], q.picked[1] = r.pick, true
		e.unpick(now, q, 1, h.scope, h.started, h.firstByte, o)
		q.picks[1], q.picked[1] = pick, picked
	}
	if r.charged > 0 {
		e.books.settleCall(now, q.req, r.charged-1, o, r.chargedN)
	}
	e.settle(now, &rd)
	e.adm.FreeExtra(h.scope)
	e.pump(now, &rd)
	return rd
}

// lone reports whether o, on scope s, is a lone transient failure: a
// 5xx other than 503/529, or a broken connection, on a provider whose
// breaker is closed and whose last counted call did not fail.
func (e *Engine) lone(now time.Time, s int, o Outcome) bool {
	if o.Kind != ConnError && (o.Kind != Failed || o.Status < 500) {
		return false
	}
	sc := e.scope(s)
	if sc == nil || sc.cfg.Breaker == nil {
		return true
	}
	st, _ := sc.cfg.Breaker.State(now)
	return st == breaker.Closed && sc.cfg.Breaker.ErrorRun() == 0
}

// fits reports whether a call on q starting after d can still meet q's
// deadline.
func (e *Engine) fits(now time.Time, q *request, d time.Duration) bool {
	return q.req.Deadline.IsZero() || now.Add(d).Before(q.req.Deadline)
}

// retryWait is the longest Retry-After waited out on the same target.
func (e *Engine) retryWait() time.Duration {
	if e.retryCfg.WaitMax > 0 {
		return e.retryCfg.WaitMax
	}
	return e.scaled(DefaultRetryWait)
}

// retryable: failures that leave nothing behind at the provider worth
// keeping and say nothing about the request itself, and answers that
// broke the request's schema (another try, or another backend, may not).
func retryable(o Outcome) bool {
	switch o.Kind {
	case OK:
		return o.Invalid
	case ConnError, Overloaded:
		return true
	case Failed:
		return o.Status >= 500
	}
	return false
}
