package admission

import "time"

// A retry is worth its load only when it is likely to be served. While a
// class is refused more often than it is admitted, a retry of one of its
// requests is more likely to be refused again than served, so each retry
// that gets through costs more than one wasted attempt: the retries make
// the overload they are retrying into. The futility meter watches each
// class's refusals over a rolling window; while they are at least half its
// decisions, refusals say so (Refusal.Futile), and the gateway tells the
// client not to retry (x-should-retry: false, which the OpenAI and
// Anthropic SDKs and the client package honour). So do a class's
// refusals while it has been refused in nearly every second of the
// window, whatever its share (saturated): demand has outrun the gateway,
// and a retry only takes another request's place. A burst that sheds a
// few requests of an otherwise served class leaves retries encouraged.
const (
	futileBuckets = 10
	futileBucket  = time.Second
	// futileShare is the share of refusals at which a retry is more
	// likely refused than served: the break-even of one wasted attempt
	// per useful one.
	futileShare = 0.5
	// futileEvidence decisions in the window make the share trusted, so
	// that two refusals at a trickle of traffic do not turn retries off.
	futileEvidence = 20
	// saturatedQuiet is how many of the window's full seconds may pass
	// without a refusal while the class still counts as saturated: near
	// the balance of demand and service, a queue that is full most of the
	// time has a second or two of slack now and then.
	saturatedQuiet = 2
)

// Events the futile meter counts, per class and bucket.
const (
	evDecided  = iota // a decision on a new request: let in or refused
	evRefused         // a refusal, at the door or of a waiter
	evIn              // a new request let in (started or queued)
	evQueued          // a new request put in the queue
	evUnserved        // a waiter refused after waiting
	numFutileEvents
)

// futileMeter counts each class's admission events over the last
// futileBuckets buckets.
type futileMeter struct {
	// width is a bucket's length: futileBucket, time-scaled
	// (Config.TimeScale); zero means futileBucket.
	width   time.Duration
	origin  time.Time
	started bool
	epoch   int64 // newest bucket written
	n       [futileBuckets][numFutileEvents][numPriorities]int
}

func (m *futileMeter) bucket(now time.Time) int {
	if !m.started {
		m.origin, m.started = now, true
	}
	if m.width <= 0 {
		m.width = futileBucket
	}
	n := int64(now.Sub(m.origin) / m.width)
	if n < m.epoch {
		n = m.epoch // a clock stepping back writes into the newest bucket
	}
	if n-m.epoch > futileBuckets {
		m.epoch = n - futileBuckets // everything is stale: clear each once
	}
	for ; m.epoch < n; m.epoch++ {
		m.n[(m.epoch+1)%futileBuckets] = [numFutileEvents][numPriorities]int{}
	}
	return int(n % futileBuckets)
}

// count records events of class p at now.
func (m *futileMeter) count(now time.Time, p Priority, events ...int) {
	if p >= numPriorities {
		return
	}
	b := m.bucket(now)
	for _, e := range events {
		m.n[b][e][p]++
	}
}

// sum is the window's count of event e for the classes in [from, to).
func (m *futileMeter) sum(now time.Time, e int, from, to Priority) int {
	m.bucket(now)
	n := 0
	for i := range futileBuckets {
		for q := from; q < to && q < numPriorities; q++ {
			n += m.n[i][e][q]
		}
	}
	return n
}

// mostly reports whether, over the window, event part happened to at
// least futileShare of class p's events whole, with whole at least
// futileEvidence.
func (m *futileMeter) mostly(now time.Time, p Priority, part, whole int) bool {
	if p >= numPriorities {
		return false
	}
	w := m.sum(now, whole, p, p+1)
	return w >= futileEvidence && float64(m.sum(now, part, p, p+1)) >= futileShare*float64(w)
}

// futile reports whether a retry of class p is more likely refused than
// served now, or, served or not, adds to an overload that retries cannot
// shorten (saturated).
func (m *futileMeter) futile(now time.Time, p Priority) bool {
	return m.mostly(now, p, evRefused, evDecided) || m.saturated(now, p)
}

// saturated reports whether class p has been refused in all but at
// most saturatedQuiet of the window's full buckets: not a burst that
// sheds for a second or two, but demand that has outrun what the
// gateway serves for most of the window. A retry then only changes who
// is refused, not how many: each one that is served takes the place of
// another request, which is refused in its stead, so retries add load
// and serve no one more. The newest bucket is still filling and does
// not count.
func (m *futileMeter) saturated(now time.Time, p Priority) bool {
	if p >= numPriorities || m.sum(now, evDecided, p, p+1) < futileEvidence {
		return false
	}
	newest := m.bucket(now)
	quiet := 0
	for i := range futileBuckets {
		if i != newest && m.n[i][evRefused][p] == 0 {
			quiet++
		}
	}
	return quiet <= saturatedQuiet
}

// starved reports whether most of class p's recent waiters were refused
// after waiting: a new waiter would likely wait only to be refused.
func (m *futileMeter) starved(now time.Time, p Priority) bool {
	return m.mostly(now, p, evUnserved, evQueued)
}

// inflow is how many requests a second of the classes more important
// than p were let in over the window: the rate at which they join the
// queue ahead of p's waiters.
func (m *futileMeter) inflow(now time.Time, p Priority) float64 {
	if !m.started {
		return 0
	}
	n := m.sum(now, evIn, Critical, p)
	span := min(now.Sub(m.origin), futileBuckets*m.width)
	if span < m.width {
		return 0 // too short a window to call it a rate
	}
	return float64(n) / span.Seconds()
}
