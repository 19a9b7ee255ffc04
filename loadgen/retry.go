package loadgen

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/scenario"
)

// Retry defaults, as the scenario package documents them.
const (
	defaultMaxAttempts = 3
	defaultRetryBase   = 500 * time.Millisecond
	defaultRetryCap    = 30 * time.Second
)

// retryPolicy is a client's retry behaviour, scaled to wall-clock time.
type retryPolicy struct {
	strategy    string
	maxAttempts int // total, the first included
	base, cap   time.Duration
}

func newRetryPolicy(r scenario.Retry, timeScale float64) retryPolicy {
	p := retryPolicy{strategy: r.Strategy, maxAttempts: r.MaxAttempts, base: r.Base, cap: r.Cap}
	if p.strategy == "" {
		p.strategy = "none"
	}
	if p.maxAttempts <= 0 {
		p.maxAttempts = defaultMaxAttempts
	}
	if p.strategy == "none" {
		p.maxAttempts = 1
	}
	if p.base <= 0 {
		p.base = defaultRetryBase
	}
	if p.cap <= 0 {
		p.cap = defaultRetryCap
	}
	p.base = time.Duration(float64(p.base) * timeScale)
	p.cap = time.Duration(float64(p.cap) * timeScale)
	return p
}

// delay is the wait before retry n (1 for the first retry). hint is the
// server's Retry-After, zero when it sent none; only the jittered
// strategy, the one modelled on the vendors' SDKs, reads it.
func (p retryPolicy) delay(n int, hint time.Duration, rng *rand.Rand) time.Duration {
	switch p.strategy {
	case "backoff":
		return p.exp(n)
	case "jittered":
		var d time.Duration
		if e := p.exp(n); e > 0 {
			d = time.Duration(rng.Int64N(int64(e)))
		}
		return max(d, hint)
	}
	return 0
}

// exp is min(cap, base*2^(n-1)), doubling step by step so that a large n
// cannot overflow.
func (p retryPolicy) exp(n int) time.Duration {
	d := p.base
	for i := 1; i < n && d < p.cap; i++ {
		d *= 2
	}
	return min(d, p.cap)
}

// retryable reports whether a client would try again after this answer:
// a shed, a rate limit, a server error other than a deadline (the gateway
// already waited as long as it would), or a connection that failed. An
// answer that has begun is never retried: its status is spent.
func retryable(a *attempt) bool {
	switch {
	case a.started || a.abandoned:
		return false
	case a.status == 0:
		return true // connection error
	case a.status == http.StatusTooManyRequests:
		return true
	case a.status == http.StatusGatewayTimeout:
		return false
	case a.status >= 500:
		return true
	}
	return false
}

// retryAfter reads the server's hint: Retry-After-Ms when present (the
// precise one both vendors' SDKs prefer), else Retry-After in seconds or
// as an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}
