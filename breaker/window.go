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

// history counts calls by the time they started, in fixed-width buckets
// of a ring, so the breaker can ask what became of the calls started in
// any recent stretch of time. Counting by start time rather than by the
// time a verdict arrived is what tells a sustained brownout from a short
// spike: a slow call's verdict comes a slow threshold after it started,
// but the stretch of start times that turned out slow is exactly how
// long the provider was slow.
type history struct {
	origin time.Time
	width  time.Duration
	ring   []slot
}

type slot struct {
	idx int64 // which width-long slice of time since origin
	counts
}

// historyWidth is the time one bucket covers; historySlots how many the
// ring keeps: 17 minutes, room for any window plus any slow threshold.
const (
	historyWidth = 250 * time.Millisecond
	historySlots = 4096
)

func newHistory() history {
	return history{width: historyWidth, ring: make([]slot, historySlots)}
}

func (h *history) index(t time.Time) int64 {
	d := t.Sub(h.origin)
	if d < 0 {
		return -1 - int64((-d-1)/h.width) // floor for times before origin
	}
	return int64(d / h.width)
}

// add records c against the bucket of start. A start older than the
// ring keeps is dropped: no judgement reaches back that far.
func (h *history) add(start time.Time, c counts) {
	idx := h.index(start)
	s := &h.ring[((idx%historySlots)+historySlots)%historySlots]
	if s.idx != idx {
		if s.idx > idx && s.calls+s.limited > 0 {
			return // the slot holds a newer bucket
		}
		*s = slot{idx: idx}
	}
	s.add(c)
}

// sum totals the calls started from from to to, by bucket: the buckets
// that hold from and to are both included.
func (h *history) sum(from, to time.Time) counts {
	var c counts
	lo, hi := h.index(from), h.index(to)
	if hi-lo >= historySlots {
		lo = hi - historySlots + 1
	}
	for i := lo; i <= hi; i++ {
		if s := &h.ring[((i%historySlots)+historySlots)%historySlots]; s.idx == i {
			c.add(s.counts)
		}
	}
	return c
}

// reset forgets every call.
func (h *history) reset() {
	for i := range h.ring {
		h.ring[i] = slot{}
	}
}

// latencies keeps the last HealthySamples healthy latencies as a ring,
// and the same values sorted, so the p95 is an index and a new sample
// costs two binary searches and a small memmove rather than a sort.
//
// It also marks the ring's p95 once a minute, for BaselineMemory, so the
// derived threshold can rest on the lowest of them (baseline): a ring of
// recent samples alone follows a slow ramp up, each sample under twice
// the p95 of those before it, and a provider sliding from 1 s to 20 s
// over five minutes would never pass its own threshold.
type latencies struct {
	ring   []time.Duration
	next   int // the oldest sample once the ring is full
	sorted []time.Duration
	marks  []mark
	markAt time.Time // when the current minute began
}

type mark struct {
	at  time.Time
	p95 time.Duration
}

// BaselineMemory is how long a minute's p95 can hold the derived slow
// threshold down: a drift slower than this, the threshold follows.
const BaselineMemory = 10 * time.Minute

// mark records the ring's p95 once a minute has passed since the last
// mark, if the ring holds at least enough samples to trust, and forgets
// marks older than BaselineMemory.
func (l *latencies) mark(now time.Time, enough int) {
	switch {
	case l.markAt.IsZero():
		l.markAt = now
	case now.Sub(l.markAt) >= time.Minute:
		if l.len() >= enough {
			l.marks = append(l.marks, mark{now, l.p95()})
		}
		l.markAt = now
	}
	l.marks = slices.DeleteFunc(l.marks, func(m mark) bool { return now.Sub(m.at) > BaselineMemory })
}

// baseline is the lowest of the current p95 and the p95s marked within
// BaselineMemory of now.
func (l *latencies) baseline(now time.Time) time.Duration {
	b := l.p95()
	for _, m := range l.marks {
		if now.Sub(m.at) <= BaselineMemory {
			b = min(b, m.p95)
		}
	}
	return b
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
