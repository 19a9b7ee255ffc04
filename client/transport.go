package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-gw/sluice/client/brake"
)

// Header names used by the transport.
const (
	// HeaderIdempotencyKey is added to every request that lacks it and kept
	// identical across retries, so a server (Sluice or the provider) can
	// deduplicate a retried request that already took effect.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderTimeout carries the time left until the request context's
	// deadline, e.g. "1234ms", recomputed on every attempt.
	HeaderTimeout = "X-Sluice-Timeout"
	// HeaderRetryAfterMS is the millisecond retry hint sent by OpenAI-style
	// APIs; it takes precedence over Retry-After.
	HeaderRetryAfterMS = "Retry-After-Ms"
	// HeaderShouldRetry "false" forbids a retry of a retryable answer.
	HeaderShouldRetry = "X-Should-Retry"
)

// Defaults applied by New to zero-valued Options fields.
const (
	DefaultMaxAttempts    = 3
	DefaultBase           = 500 * time.Millisecond
	DefaultCap            = 30 * time.Second
	DefaultRetryBudget    = brake.DefaultRetryBudget
	DefaultBudgetBurst    = brake.DefaultBudgetBurst
	DefaultThrottleK      = brake.DefaultThrottleK
	DefaultThrottleWindow = brake.DefaultThrottleWindow
	DefaultThrottleBucket = brake.DefaultThrottleBucket
)

// maxDrain bounds how much of a retryable response body is read before it is
// closed, so that the connection can be reused without reading a huge body.
const maxDrain = 64 << 10

// Hooks are optional callbacks for metrics. Each may be nil. They are called
// synchronously on the goroutine running RoundTrip and must not block.
type Hooks struct {
	// Attempt is called before each attempt is sent; attempt starts at 1.
	Attempt func(req *http.Request, attempt int)
	// Retry is called when an attempt failed retryably and the transport is
	// about to wait and try again. resp is non-nil (its body already
	// closed) when the server answered, err when the connection failed.
	Retry func(req *http.Request, attempt int, wait time.Duration, resp *http.Response, err error)
	// Throttled is called when a request is shed locally by adaptive
	// throttling, with the rejection probability in force.
	Throttled func(req *http.Request, probability float64)
	// BudgetExhausted is called when a retry was warranted but the retry
	// budget had no token left; the last result is returned as is.
	BudgetExhausted func(req *http.Request, attempt int)
}

// ThrottleOptions configures adaptive client-side throttling.
type ThrottleOptions struct {
	// Disabled turns local throttling off.
	Disabled bool
	// K is the multiplier on accepted requests: the client sends up to K
	// times as many requests as the server recently accepted before it
	// starts shedding. Default 2. Lower is more aggressive.
	K float64
	// Window is the rolling window over which requests and accepts are
	// counted. Default 2 minutes.
	Window time.Duration
	// Buckets is how many buckets the window is split into; the window
	// advances one bucket at a time. Default 20.
	Buckets int
}

// Options configures a Transport. The zero value is valid and yields the
// defaults described on each field.
type Options struct {
	// Transport is the wrapped round tripper. Default http.DefaultTransport.
	Transport http.RoundTripper

	// MaxAttempts is the total number of attempts per request, including
	// the first. Default 3; 1 disables retries.
	MaxAttempts int
	// Base is the backoff for the first retry; it doubles per retry.
	// Default 500ms.
	Base time.Duration
	// Cap bounds every wait: a backoff is cut to it, and a server that
	// asks for a longer wait (Retry-After) gets its answer passed on, not
	// a retry sooner than it asked.
	// Default 30s.
	Cap time.Duration

	// RetryBudget is the ratio of retries to requests allowed: each new
	// request earns RetryBudget tokens and each retry spends one. Default
	// 0.1 (retries add at most 10% load). Negative disables the budget.
	RetryBudget float64
	// BudgetBurst is the bucket size (and initial fill), allowing a few
	// retries before any request has earned tokens. Default 10.
	BudgetBurst float64

	// Throttle configures adaptive client-side throttling.
	Throttle ThrottleOptions

	// Hooks receive metric events.
	Hooks Hooks

	// Rand returns uniform numbers in [0, 1) for jitter and throttling.
	// Calls are serialised by the transport. Default math/rand/v2, which
	// is seeded from the OS; tests can pass a seeded source.
	Rand func() float64
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Sleep waits for d or until ctx is done, returning ctx.Err() in the
	// latter case. Default uses a timer. Tests can record waits instead.
	Sleep func(ctx context.Context, d time.Duration) error
	// NewKey returns a fresh idempotency key. Default: 128 random bits
	// from crypto/rand, hex encoded.
	NewKey func() string
}

// ThrottledError is returned by RoundTrip when a request is shed locally,
// without touching the network, because the server refused most recent
// requests.
type ThrottledError struct {
	// Probability is the local rejection probability that was in force.
	Probability float64
	// Requests and Accepts are the counts over the rolling window.
	Requests, Accepts float64
	// Window is the length of the rolling window.
	Window time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("sluice client: request shed locally (p=%.2f): the server refused most recent requests "+
		"(%.0f sent, %.0f accepted in the last %s)", e.Probability, e.Requests, e.Accepts, e.Window)
}

// Transport is an http.RoundTripper that retries retryable failures within a
// retry budget and sheds load locally when the server is overloaded. It is
// safe for concurrent use.
type Transport struct {
	next        http.RoundTripper
	maxAttempts int
	base, cap   time.Duration
	hooks       Hooks
	now         func() time.Time
	sleep       func(ctx context.Context, d time.Duration) error
	newKey      func() string

	mu       sync.Mutex
	rnd      func() float64
	budget   *budget
	throttle *throttle
}

// New returns a Transport configured by o.
func New(o Options) *Transport {
	t := &Transport{
		next:        o.Transport,
		maxAttempts: o.MaxAttempts,
		base:        o.Base,
		cap:         o.Cap,
		hooks:       o.Hooks,
		now:         o.Now,
		sleep:       o.Sleep,
		newKey:      o.NewKey,
		rnd:         o.Rand,
	}
	if t.next == nil {
		t.next = http.DefaultTransport
	}
	if t.maxAttempts <= 0 {
		t.maxAttempts = DefaultMaxAttempts
	}
	if t.base <= 0 {
		t.base = DefaultBase
	}
	if t.cap <= 0 {
		t.cap = DefaultCap
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.sleep == nil {
		t.sleep = sleepCtx
	}
	if t.newKey == nil {
		t.newKey = randomKey
	}
	if t.rnd == nil {
		t.rnd = mrand.Float64
	}
	if o.RetryBudget >= 0 {
		ratio, burst := o.RetryBudget, o.BudgetBurst
		if ratio == 0 {
			ratio = DefaultRetryBudget
		}
		if burst <= 0 {
			burst = DefaultBudgetBurst
		}
		t.budget = brake.NewRetryBudget(ratio, float64(burst))
	}
	if !o.Throttle.Disabled {
		t.throttle = brake.NewThrottle(o.Throttle.K, o.Throttle.Window, o.Throttle.Buckets)
	}
	return t
}

// ThrottleProbability reports the probability with which a new request
// would currently be shed locally. It is 0 when throttling is disabled.
func (t *Transport) ThrottleProbability() float64 {
	if t.throttle == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p, _, _ := t.throttle.Probability(t.now())
	return p
}

// CloseIdleConnections forwards to the wrapped transport when it supports it.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	r := req.Clone(ctx)
	if r.Header.Get(HeaderIdempotencyKey) == "" {
		r.Header.Set(HeaderIdempotencyKey, t.newKey())
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	deadline, hasDeadline := ctx.Deadline()

	t.mu.Lock()
	if t.budget != nil {
		t.budget.Earn()
	}
	t.mu.Unlock()

	if shed, p, te := t.shed(); shed {
		if t.hooks.Throttled != nil {
			t.hooks.Throttled(req, p)
		}
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, te
	}
	for attempt := 1; ; attempt++ {
		if hasDeadline {
			r.Header.Set(HeaderTimeout, formatTimeout(deadline.Sub(t.now())))
		}
		if t.hooks.Attempt != nil {
			t.hooks.Attempt(req, attempt)
		}
		resp, err := t.next.RoundTrip(r)
		if err != nil && ctx.Err() != nil {
			// Cancelled by the caller: says nothing about the server.
			return resp, err
		}
		t.record(accepted(resp, err))

		if !retryable(resp, err) || attempt >= t.maxAttempts || !replayable || ctx.Err() != nil {
			return resp, err
		}
		wait, ok := t.wait(resp, attempt)
		if !ok || (hasDeadline && t.now().Add(wait).After(deadline)) {
			return resp, err
		}
		if !t.spend() {
			if t.hooks.BudgetExhausted != nil {
				t.hooks.BudgetExhausted(req, attempt)
			}
			return resp, err
		}
		var body io.ReadCloser
		if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
			b, gerr := req.GetBody()
			if gerr != nil {
				return resp, err
			}
			body = b
		}
		// Nothing of a retryable response reaches the caller.
		if resp != nil {
			drainClose(resp.Body)
		}
		if t.hooks.Retry != nil {
			t.hooks.Retry(req, attempt, wait, resp, err)
		}
		if serr := t.sleep(ctx, wait); serr != nil {
			if body != nil {
				body.Close()
			}
			return nil, serr
		}
		if body != nil {
			r.Body = body
		}
	}
}

// shed decides whether to reject a new request locally. Shed requests
// count as requests, as in the SRE book, so the probability keeps rising
// while the server keeps refusing. Only first attempts are shed; retries are
// limited by the retry budget instead, but every attempt sent is counted.
func (t *Transport) shed() (bool, float64, *ThrottledError) {
	if t.throttle == nil {
		return false, 0, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	shed, p, reqs, accs := t.throttle.Shed(t.now(), t.rnd())
	if !shed {
		return false, p, nil
	}
	return true, p, &ThrottledError{Probability: p, Requests: reqs, Accepts: accs, Window: t.throttle.Window()}
}

func (t *Transport) record(ok bool) {
	if t.throttle == nil {
		return
	}
	t.mu.Lock()
	t.throttle.Add(t.now(), ok)
	t.mu.Unlock()
}

func (t *Transport) spend() bool {
	if t.budget == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.budget.Spend()
}

// wait returns how long to wait before retry number n (n = 1 for the first
// retry): the server's hint if it gave one, else full-jitter exponential
// backoff. ok is false when the server asked for more than Cap: a
// client never comes back sooner than it was told, so it does not retry.
func (t *Transport) wait(resp *http.Response, n int) (d time.Duration, ok bool) {
	if resp != nil {
		if d, ok := RetryAfter(resp.Header, t.now()); ok {
			return d, d <= t.cap
		}
	}
	return t.backoff(n), true
}

// backoff returns a uniform duration in [0, min(Cap, Base·2^(n−1))].
func (t *Transport) backoff(n int) time.Duration {
	ceil := t.base
	for i := 1; i < n && ceil < t.cap; i++ {
		ceil *= 2
	}
	ceil = min(ceil, t.cap)
	t.mu.Lock()
	f := t.rnd()
	t.mu.Unlock()
	return time.Duration(f * float64(ceil+1))
}

// RetryAfter reads a server's hint of when to come back: retry-after-ms
// when present (the precise one both vendors' SDKs prefer), else
// Retry-After in seconds or as an HTTP date, counted from now. ok is
// false when there is no usable hint. A number too large for a Duration
// (past about 31 years, or infinite) is no hint: converted, it would
// wrap to a negative wait and a retry at once.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get(HeaderRetryAfterMS)); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s >= 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second)), true
		}
		return 0, false
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// retryableStatus reports whether a status code is worth retrying:
// 408, 429, 529 and 5xx except 501 (Not Implemented) and 505 (HTTP
// Version Not Supported), which will fail the same way again.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, 529:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return code >= 500 && code <= 599
}

// retryable reports whether an attempt may be retried. A server that
// answers x-should-retry: false (Sluice while most of a class is refused,
// and the vendors' APIs) is taken at its word, as the official SDKs do.
//
// A 409 with Retry-After is Sluice saying that the request with this
// Idempotency-Key is still being answered on another replica: the retry
// gets the stored answer, not a second generation, so it is retried
// (every request this transport sends has a key).
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return connectionError(err)
	}
	if resp == nil || resp.Header.Get(HeaderShouldRetry) == "false" {
		return false
	}
	if resp.StatusCode == http.StatusConflict {
		return resp.Header.Get("Retry-After") != ""
	}
	return retryableStatus(resp.StatusCode)
}

// connectionError reports whether err is a network failure that happened
// before any response arrived (refused, reset, EOF, dial timeout).
func connectionError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE)
}

// accepted reports whether the server accepted the attempt for throttling
// purposes: anything but a connection error or an overload status.
func accepted(resp *http.Response, err error) bool {
	if err != nil || resp == nil {
		return false
	}
	return brake.Accepted(resp.StatusCode)
}

func formatTimeout(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 0 {
		ms = 0
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

func drainClose(b io.ReadCloser) {
	if b == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, b, maxDrain)
	_ = b.Close()
}

// sleepCtx waits d, or until ctx ends, and returns the context's error
// when it ends first. A d of zero or less does not wait.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func randomKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return hex.EncodeToString(b[:])
}
