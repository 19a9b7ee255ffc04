package admission

import "time"

// drainMeter estimates how fast admitted work drains, for an honest
// Retry-After. It measures completions per slot-second: completions over
// the window divided by the time integral of the requests in flight. That
// is the service rate of one slot while the gateway was actually busy, so
// an idle minute does not dilute it (a plain completions-per-second rate
// after a quiet spell says the queue drains at a trickle when it drains
// in a second), and a brownout lowers it while its slow calls are still
// in flight, before any of them completes.
//
// The window is drainBuckets fixed buckets, so it forgets within
// drainWindow. When the window holds too little evidence (a burst right
// after a quiet spell), the last well-founded rate stands in, blended
// with what the window has: the previous busy spell is a better guess
// than nothing.
type drainMeter struct {
	done [drainBuckets]int
	busy [drainBuckets]float64 // slot-seconds
	// origin anchors bucket numbers at the first observation, so any
	// clock works, a virtual one starting at the zero Time included.
	origin  time.Time
	started bool
	// epoch is the bucket number of the newest bucket written.
	epoch int64
	// last is when the in-flight count last changed, to held.
	last time.Time
	held int
	// prior is the per-slot rate of the last window with drainEvidence
	// completions; zero until there has been one.
	prior float64
	// width is a bucket's length: drainBucket, time-scaled
	// (Config.TimeScale); zero means drainBucket.
	width time.Duration
}

const (
	drainBuckets = 40
	drainBucket  = 250 * time.Millisecond
	drainWindow  = drainBuckets * drainBucket
	// drainEvidence completions in the window make its rate trusted.
	drainEvidence = 8
	// priorWeight is how many completions' worth the prior rate counts
	// for when the window has fewer than drainEvidence.
	priorWeight = 4
)

// advance zeroes buckets that fell out of the window since the last write.
// A clock that steps backwards leaves the window where it is.
func (m *drainMeter) advance(now time.Time) {
	if !m.started {
		m.origin, m.last, m.started = now, now, true
	}
	if m.width <= 0 {
		m.width = drainBucket
	}
	e := int64(now.Sub(m.origin) / m.width)
	if e <= m.epoch {
		return
	}
	gap := min(e-m.epoch, drainBuckets)
	for i := int64(1); i <= gap; i++ {
		m.done[(m.epoch+i)%drainBuckets] = 0
		m.busy[(m.epoch+i)%drainBuckets] = 0
	}
	m.epoch = e
}

// occupy records that inFlight requests are in flight from now on.
func (m *drainMeter) occupy(now time.Time, inFlight int) {
	m.advance(now)
	if now.After(m.last) {
		m.busy[m.epoch%drainBuckets] += float64(m.held) * now.Sub(m.last).Seconds()
		m.last = now
	}
	m.held = inFlight
}

// record counts one completion at now. A window that now holds enough
// evidence becomes the prior, so the rate of a busy spell is remembered
// whether or not anyone asked for it then.
func (m *drainMeter) record(now time.Time) {
	m.advance(now)
	m.done[m.epoch%drainBuckets]++
	if n, s := m.totals(now); n >= drainEvidence && s > 0 {
		m.prior = float64(n) / s
	}
}

// totals sums the window: completions, and slot-seconds up to now.
func (m *drainMeter) totals(now time.Time) (n int, s float64) {
	for i := range drainBuckets {
		n += m.done[i]
		s += m.busy[i]
	}
	if now.After(m.last) {
		s += float64(m.held) * now.Sub(m.last).Seconds()
	}
	return n, s
}

// slotRate returns completions per slot-second, or 0 with no evidence.
func (m *drainMeter) slotRate(now time.Time) float64 {
	m.advance(now)
	n, s := m.totals(now)
	switch {
	case n >= drainEvidence && s > 0:
		m.prior = float64(n) / s
		return m.prior
	case m.prior > 0:
		return (float64(n) + priorWeight) / (s + priorWeight/m.prior)
	case n > 0 && s > 0:
		return float64(n) / s
	}
	return 0
}

// recentBuckets is the span recentRate looks back over: a second.
const recentBuckets = 4

// recentRate is slotRate over the last second alone, or 0 with fewer
// than drainEvidence completions in it. It sees a recovery the ten-second
// window is still averaging away.
func (m *drainMeter) recentRate(now time.Time) float64 {
	m.advance(now)
	n, s := 0, 0.0
	for i := int64(0); i < recentBuckets; i++ {
		b := (m.epoch - i) % drainBuckets
		if b < 0 {
			break
		}
		n += m.done[b]
		s += m.busy[b]
	}
	if now.After(m.last) {
		s += float64(m.held) * now.Sub(m.last).Seconds()
	}
	if n < drainEvidence || s <= 0 {
		return 0
	}
	return float64(n) / s
}
