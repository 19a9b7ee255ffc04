package admission

import "time"

// drainMeter counts completions in a sliding window of fixed buckets, so the
// rate it reports forgets an old burst within drainWindow.
type drainMeter struct {
	buckets [drainBuckets]int
	// epoch is the bucket number (time since zero / drainBucket) of the
	// newest bucket written.
	epoch int64
}

const (
	drainBuckets = 40
	drainBucket  = 250 * time.Millisecond
	drainWindow  = drainBuckets * drainBucket
)

func bucketOf(now time.Time) int64 { return now.UnixNano() / int64(drainBucket) }

// advance zeroes buckets that fell out of the window since the last write.
func (m *drainMeter) advance(now time.Time) {
	e := bucketOf(now)
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
