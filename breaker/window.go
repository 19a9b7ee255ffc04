package breaker

import (
	"slices"
	"time"
)

// counts are the outcomes in a bucket or a window. Each counted call is
// exactly one of ok, error or slow: calls = ok + errors + slow. 429s are
// kept apart, in limited, and are not calls.
type counts struct {
	calls, errors, slow, limited int
}

func (c *counts) add(o counts) {
	c.calls += o.calls
	c.errors += o.errors
	c.slow += o.slow
	c.limited += o.limited
}

func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

func (c counts) errorRate() float64 { return ratio(c.errors, c.calls) }
func (c counts) slowRate() float64  { return ratio(c.slow, c.calls) }

type bucket struct {
	idx int64 // which bucket-width slice of time since origin
	counts
}

// window is a time-based sliding window of Buckets buckets, in the style
// of failsafe-go's timed stats but without a clock: the bucket is found
// from now.
type window struct {
	origin  time.Time
	width   time.Duration
	buckets []bucket
}

func (w *window) index(now time.Time) int64 { return int64(now.Sub(w.origin) / w.width) }

// add records c in now's bucket, recycling the slot if it held an older
// bucket.
func (w *window) add(now time.Time, c counts) {
	idx := w.index(now)
	b := &w.buckets[idx%int64(len(w.buckets))]
	if b.idx != idx {
		*b = bucket{idx: idx}
	}
	b.add(c)
}

// totals sums the buckets that now's window covers.
func (w *window) totals(now time.Time) counts {
	idx := w.index(now)
	var c counts
	for _, b := range w.buckets {
		if b.idx <= idx && b.idx > idx-int64(len(w.buckets)) {
			c.add(b.counts)
		}
	}
	return c
}

// reset forgets every outcome. A zero bucket counts nothing whatever its
// index, so zeroing is enough.
func (w *window) reset() { clear(w.buckets) }

// latencies keeps the last HealthySamples healthy latencies as a ring,
// and the same values sorted, so the p95 is an index and a new sample
// costs two binary searches and a small memmove rather than a sort.
type latencies struct {
	ring   []time.Duration
	next   int // the oldest sample once the ring is full
	sorted []time.Duration
}

func (l *latencies) add(d time.Duration) {
	if len(l.ring) < HealthySamples {
		l.ring = append(l.ring, d)
	} else {
		old := l.ring[l.next]
		l.ring[l.next] = d
		l.next = (l.next + 1) % HealthySamples
		i, _ := slices.BinarySearch(l.sorted, old)
		l.sorted = slices.Delete(l.sorted, i, i+1)
	}
	i, _ := slices.BinarySearch(l.sorted, d)
	l.sorted = slices.Insert(l.sorted, i, d)
}

func (l *latencies) len() int { return len(l.sorted) }

// p95 is the nearest-rank 95th percentile; 0 when empty.
func (l *latencies) p95() time.Duration {
	n := len(l.sorted)
	if n == 0 {
		return 0
	}
	return l.sorted[(95*n+99)/100-1]
}
