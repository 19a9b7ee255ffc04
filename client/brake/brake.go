// Package brake holds the two brakes a well-behaved client puts on
// itself, from Google's SRE book ("Handling Overload"): a retry budget
// and adaptive throttling. The client package runs them in applications;
// the simulator and sluice load run the same code for the clients they
// model, so the "Sluice client" row of a scenario is this package, not a
// sketch of it. It is pure: it reads no clock (now is passed in), starts
// nothing and takes no lock, and internal/core's purity test holds it to
// that.
package brake

import "time"

// Defaults of the SRE book's brakes, as the client package applies them.
const (
	// DefaultRetryBudget: each request earns 0.1 retry, so retries add
	// at most 10 % to the load.
	DefaultRetryBudget = 0.1
	// DefaultBudgetBurst lets the first few failures retry before any
	// request has earned tokens.
	DefaultBudgetBurst = 10
	// DefaultThrottleK: the client sends up to twice what the server
	// accepts.
	DefaultThrottleK      = 2
	DefaultThrottleWindow = 2 * time.Minute
	DefaultThrottleBucket = 20
)

// RetryBudget is a token bucket limiting retries to a fraction of
// requests: each request earns Ratio tokens, each retry spends one, and
// the bucket holds at most Burst. It is not safe for concurrent use.
type RetryBudget struct {
	ratio, burst, tokens float64
}

// NewRetryBudget returns a full budget. Zero arguments take the
// defaults.
func NewRetryBudget(ratio, burst float64) *RetryBudget {
	if ratio <= 0 {
		ratio = DefaultRetryBudget
	}
	if burst <= 0 {
		burst = DefaultBudgetBurst
	}
	return &RetryBudget{ratio: ratio, burst: burst, tokens: burst}
}

// Earn credits one request.
func (b *RetryBudget) Earn() { b.tokens = min(b.burst, b.tokens+b.ratio) }

// Spend takes one retry's token, or reports false when none is left.
func (b *RetryBudget) Spend() bool {
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Throttle counts requests and accepts over a rolling window split into
// buckets and derives the SRE book's client-side rejection probability
// max(0, (requests − K·accepts) / (requests + 1)). It is not safe for
// concurrent use.
type Throttle struct {
	k      float64
	window time.Duration
	width  int64 // bucket width in nanoseconds
	slots  []throttleSlot
}

type throttleSlot struct {
	idx       int64 // absolute bucket index (time / width) + 1; 0 means unused
	reqs, acc float64
}

// NewThrottle returns an empty throttle. Zero arguments take the
// defaults.
func NewThrottle(k float64, window time.Duration, buckets int) *Throttle {
	if k <= 0 {
		k = DefaultThrottleK
	}
	if window <= 0 {
		window = DefaultThrottleWindow
	}
	if buckets <= 0 {
		buckets = DefaultThrottleBucket
	}
	width := max(int64(window)/int64(buckets), 1)
	return &Throttle{k: k, window: window, width: width, slots: make([]throttleSlot, buckets)}
}

// Window is how far back the throttle counts.
func (th *Throttle) Window() time.Duration { return th.window }

// Add counts one request at now, and whether the server accepted it.
func (th *Throttle) Add(now time.Time, accepted bool) {
	idx := now.UnixNano()/th.width + 1
	s := &th.slots[idx%int64(len(th.slots))]
	if s.idx != idx {
		*s = throttleSlot{idx: idx}
	}
	s.reqs++
	if accepted {
		s.acc++
	}
}

// Probability is the chance with which a new request is shed locally at
// now, with the counts it was derived from.
func (th *Throttle) Probability(now time.Time) (p, reqs, acc float64) {
	idx := now.UnixNano()/th.width + 1
	oldest := idx - int64(len(th.slots)) + 1
	for _, s := range th.slots {
		if s.idx >= oldest && s.idx <= idx {
			reqs += s.reqs
			acc += s.acc
		}
	}
	return max(0, (reqs-th.k*acc)/(reqs+1)), reqs, acc
}

// Shed decides whether a new request is shed locally at now, given a
// uniform draw u in [0, 1). A shed request counts as a request that was
// not accepted, as in the SRE book, so the probability keeps rising while
// the server keeps refusing.
func (th *Throttle) Shed(now time.Time, u float64) (shed bool, p, reqs, acc float64) {
	p, reqs, acc = th.Probability(now)
	if p <= 0 || u >= p {
		return false, p, reqs, acc
	}
	th.Add(now, false)
	return true, p, reqs, acc
}

// Accepted reports whether an attempt's answer counts as accepted by the
// server for throttling: anything but a refusal for overload or rate
// (429, 503, 529), a connection failure (status 0) or a timeout.
func Accepted(status int) bool {
	switch status {
	case 0, 429, 503, 529:
		return false
	}
	return true
}
