package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// The statuses Retryable singles out, spelled out so that the model
// imports no net package.
const (
	statusTooManyRequests = 429
	statusGatewayTimeout  = 504
)

// Strategy is how a client spaces its retries.
type Strategy uint8

const (
	// NoRetry: one attempt, whatever the answer.
	NoRetry Strategy = iota
	// Immediate retries at once.
	Immediate
	// Backoff waits base·2^(n−1), up to cap, before retry n; it ignores
	// the server's Retry-After, as naive clients do.
	Backoff
	// Jittered draws the wait uniformly from [0, base·2^(n−1) capped],
	// both ends included ("full jitter"), and waits at least the
	// server's Retry-After, as the vendors' SDKs do.
	Jittered
	// Governed is the client package: the server's Retry-After when it
	// sends one (no retry when it asks for more than the cap), full
	// jitter otherwise, and every retry paid from the stream's retry
	// budget, every new request past its adaptive throttle (Governor).
	Governed
)

var strategyNames = [...]string{NoRetry: "none", Immediate: "immediate", Backoff: "backoff", Jittered: "jittered", Governed: "sluice"}

func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", s)
}

// ParseStrategy reads clients.retry.strategy; "" is none.
func ParseStrategy(s string) (Strategy, bool) {
	if s == "" {
		return NoRetry, true
	}
	for i, n := range strategyNames {
		if n == s {
			return Strategy(i), true
		}
	}
	return NoRetry, false
}

// Defaults for the zero fields of Retry, as the scenario format
// documents them.
const (
	DefaultMaxAttempts = 3
	DefaultBase        = 500 * time.Millisecond
	DefaultCap         = 30 * time.Second
)

// Retry is a client's retry behaviour. The zero value never retries.
// Zero MaxAttempts, Base and Cap take their defaults.
type Retry struct {
	Strategy    Strategy
	MaxAttempts int // in all, the first included
	Base, Cap   time.Duration
	// Patience bounds retries: none goes out once it would leave at or
	// after this long since the first attempt, because its answer could
	// only be late. It bounds them whether or not the client abandons at
	// patience (abandoning is about the attempt in flight, which is the
	// host's business). Zero: no bound.
	Patience time.Duration
}

// Ended is an attempt that ended without a usable answer, as its client
// saw it.
type Ended struct {
	Attempt int           // 1 for the first attempt
	Elapsed time.Duration // since the first attempt went out
	// Status is the HTTP status, 0 when no response came at all
	// (refused, reset, closed before a status line).
	Status int
	// Started: a 2xx status arrived, so the answer was committed; it
	// failed later (a stream cut short, a broken body).
	Started bool
	// RetryAfter is the server's hint (Retry-After-Ms, else
	// Retry-After), 0 when it sent none.
	RetryAfter time.Duration
	// NoRetry: the server said x-should-retry: false. The SDK-like
	// strategies (jittered, sluice) honour it; naive ones do not read it.
	NoRetry bool
}

// Retryable reports whether a client tries again after an answer: a
// shed, a rate limit, a server error other than a deadline (the gateway
// already waited as long as it would), or no answer at all. Never once
// the answer has started: its status is spent, and a retry would
// duplicate work the server already did.
func Retryable(status int, started bool) bool {
	switch {
	case started:
		return false
	case status == 0, status == statusTooManyRequests:
		return true
	case status == statusGatewayTimeout:
		return false
	}
	return status >= 500
}

// Next decides whether the client retries after e and how long it waits
// first. The host owns the timer: the simulator schedules the retry on
// its virtual clock, the load generator sleeps.
//
// rng is drawn from once, for Jittered only, and only when the retry is
// otherwise allowed by the attempts left and the answer; the patience
// check comes after the draw, so that the draws a host makes do not
// depend on how long its requests took.
func (p Retry) Next(e Ended, rng *rand.Rand) (time.Duration, bool) {
	if p.Strategy == NoRetry || e.Attempt >= p.maxAttempts() || !Retryable(e.Status, e.Started) {
		return 0, false
	}
	if e.NoRetry && (p.Strategy == Jittered || p.Strategy == Governed) {
		return 0, false
	}
	var d time.Duration
	switch p.Strategy {
	case Backoff:
		d = p.backoff(e.Attempt)
	case Jittered:
		n := int64(p.backoff(e.Attempt))
		if n < math.MaxInt64 {
			n++ // [0, backoff], the end included
		}
		d = max(time.Duration(rng.Int64N(n)), e.RetryAfter)
	case Governed:
		n := int64(p.backoff(e.Attempt))
		if n < math.MaxInt64 {
			n++
		}
		d = time.Duration(rng.Int64N(n)) // drawn even when unused, as above
		if e.RetryAfter > 0 {
			if e.RetryAfter > p.capOrDefault() {
				return 0, false // never back sooner than asked
			}
			d = e.RetryAfter
		}
	}
	if p.Patience > 0 && e.Elapsed+d >= p.Patience {
		return 0, false // the user is gone before the retry would go out
	}
	return d, true
}

// ReadsRetryAfter reports whether the client ever reads a server's
// Retry-After: the SDK-like strategies do; one that never retries, or
// backs off on a fixed schedule, does not.
func (p Retry) ReadsRetryAfter() bool { return p.Strategy == Jittered || p.Strategy == Governed }

func (p Retry) capOrDefault() time.Duration {
	if p.Cap <= 0 {
		return DefaultCap
	}
	return p.Cap
}

func (p Retry) maxAttempts() int {
	if p.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

// backoff is min(cap, base·2^(n−1)), doubled step by step so that a large
// n cannot overflow.
func (p Retry) backoff(n int) time.Duration {
	base, limit := p.Base, p.Cap
	if base <= 0 {
		base = DefaultBase
	}
	if limit <= 0 {
		limit = DefaultCap
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		if d > limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}
