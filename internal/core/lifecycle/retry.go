package lifecycle

import "time"

// RetryConfig bounds retries, per provider: Budget and Burst as for
// hedges (default budget in config: 10% of requests). Base bounds the
// full-jitter backoff of a retry on the same provider that sent no
// Retry-After (a request is retried once, so there is no exponent).
type RetryConfig struct {
	Budget, Burst float64
	Base          time.Duration // default 100ms
}

// Retry decides whether a request whose call failed with o, before any
// byte reached the client, gets a second call. A host asks it for every
// call that failed and whose answer the client will not get, before it
// reports the call's End, and checks nothing first: the engine knows
// the request's calls. It answers no once the request has had a second
// call (a hedge, a rescue or a retry), live or ended, so only the first
// call, failing alone, is retried: while a second call is live the
// request's answer may still come from it, and a request never has a
// third. Then a retry comes only for a failure
// that is safe to retry (a connection error, 429, 5xx or 529, or an
// answer that broke the request's declared schema), at most
// once, and within the failing provider's retry budget (retries of a
// provider's failures stay a share of the requests sent to it). The
// second call goes to the next of the request's targets that can take
// it, at once; failing that, to the same provider after delay: the
// provider's own Retry-After when it sent one of at most RetryAfterHold,
// else a full-jitter backoff, and only if the request's deadline leaves
// room. A longer Retry-After pauses the provider instead (pause.go). On success
// the second call is set up as attempt 1, like a hedge: the host sends
// it after delay and ends it with FinishSecond.
func (e *Engine) Retry(now time.Time, id ID, o Outcome) (target int, delay time.Duration, ok bool) {
	q, found := e.reqs[id]
	if !found || q.second != nil || q.expired || q.committed >= 0 || !retryable(o) {
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
	sameFits := wait <= e.scaled(RetryAfterHold) && (q.req.Deadline.IsZero() || now.Add(wait).Before(q.req.Deadline))
	i, ok := e.second(now, q, sameFits, true)
	if !ok {
		return 0, 0, false
	}
	if i == q.target {
		delay = wait
		q.second.started = now.Add(delay) // the call starts after the wait
	}
	b.tokens--
	e.hedges.stats.Retries++
	return i, delay, true
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
