package admission

import "time"

// drainMeter counts completions in a sliding window of fixed buckets, so the
// rate it reports forgets an old burst within drainWindow.
type drainMeter struct {
	buckets [drainBuckets]int
	// origin anchors bucket numbers at the first observation, so any clock
	// works, a virtual one starting at the zero Time included.
	origin  time.Time
	started bool
	// epoch is the bucket number of the newest bucket written.
	epoch int64
}

const (
	drainBuckets = 40
	drainBucket  = 250 * time.Millisecond
	drainWindow  = drainBuckets * drainBucket
)

// advance zeroes buckets that fell out of the window since the last write.
// A clock that steps backwards leaves the window where it is.
func (m *drainMeter) advance(now time.Time) {
	if !m.started {
		m.origin, m.started = now, true
	}
	e := int64(now.Sub(m.origin) / drainBucket)
	if e <= m.epoch {
		return
	}
	gap := e - m.epoch
	if gap > drainBuckets {
		gap = drainBuckets
	}
	for i := int64(1); i <= gap; i++ {
		m.buckets[(m.epoch+i)%drainBuckets] = 0
	}
	m.epoch = e
}

func (m *drainMeter) record(now time.Time) {
	m.advance(now)
	m.buckets[m.epoch%drainBuckets]++
}

// rate returns completions per second over the window ending at now.
func (m *drainMeter) rate(now time.Time) float64 {
	m.advance(now)
	n := 0
	for _, b := range m.buckets {
		n += b
	}
	return float64(n) / drainWindow.Seconds()
}
