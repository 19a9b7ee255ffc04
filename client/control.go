package client

import "time"

// budget is a token bucket limiting retries to a fraction of requests.
// Each request earns ratio tokens, each retry spends one, and the bucket
// holds at most max tokens. Callers hold Transport.mu.
type budget struct {
	ratio, max, tokens float64
}

func (b *budget) earn() { b.tokens = min(b.max, b.tokens+b.ratio) }

func (b *budget) spend() bool {
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// throttle counts requests and accepts over a rolling window split into
// buckets and derives the SRE book's client-side rejection probability
// max(0, (requests − K·accepts) / (requests + 1)). Callers hold
// Transport.mu.
type throttle struct {
	k      float64
	window time.Duration
	width  int64 // bucket width in nanoseconds
	slots  []slot
}

type slot struct {
	idx       int64 // absolute bucket index (time / width); 0 means unused
	reqs, acc float64
}

func newThrottle(o ThrottleOptions) *throttle {
	k, w, n := o.K, o.Window, o.Buckets
	if k <= 0 {
		k = DefaultThrottleK
	}
	if w <= 0 {
		w = DefaultThrottleWindow
	}
	if n <= 0 {
		n = DefaultThrottleBucket
	}
	width := max(int64(w)/int64(n), 1)
	return &throttle{k: k, window: w, width: width, slots: make([]slot, n)}
}

func (th *throttle) add(now time.Time, ok bool) {
	idx := now.UnixNano()/th.width + 1
	s := &th.slots[idx%int64(len(th.slots))]
	if s.idx != idx {
		*s = slot{idx: idx}
	}
	s.reqs++
	if ok {
		s.acc++
	}
}

func (th *throttle) counts(now time.Time) (reqs, acc float64) {
	idx := now.UnixNano()/th.width + 1
	oldest := idx - int64(len(th.slots)) + 1
	for _, s := range th.slots {
		if s.idx >= oldest && s.idx <= idx {
			reqs += s.reqs
			acc += s.acc
		}
	}
	return reqs, acc
}

func (th *throttle) probability(now time.Time) (p, reqs, acc float64) {
	reqs, acc = th.counts(now)
	return max(0, (reqs-th.k*acc)/(reqs+1)), reqs, acc
}
