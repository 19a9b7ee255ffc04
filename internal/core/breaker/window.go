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
	// memo keeps the last sum of each kind of evidence, kept current as
	// calls are counted and slid a bucket at a time as time passes: a
	// breaker asks for its evidence on every call it routes and every
	// outcome, which would otherwise each cost a pass over the window.
	memo [2]memoSum
	// changes counts adds and resets, so a judgement can tell it has
	// nothing new to look at.
	changes uint64
}

type memoSum struct {
	valid  bool
	lo, hi int64
	c      counts
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

// newHistory keeps buckets width long (historyWidth, time-scaled).
func newHistory(width time.Duration) history {
	return history{width: width, ring: make([]slot, historySlots)}
}

func (h *history) index(t time.Time) int64 { return h.bucket(int64(t.Sub(h.origin))) }

// bucket is the index of the bucket that holds off, an offset in
// nanoseconds from origin.
func (h *history) bucket(off int64) int64 {
	if off < 0 {
		return -1 - (-off-1)/int64(h.width) // floor for times before origin
	}
	return off / int64(h.width)
}

// add records c against the bucket of start. A start older than the
// ring keeps is dropped: no judgement reaches back that far.
func (h *history) add(start time.Time, c counts) { h.addAt(h.index(start), c) }

// addAt records c against bucket idx.
func (h *history) addAt(idx int64, c counts) {
	s := &h.ring[((idx%historySlots)+historySlots)%historySlots]
	if s.idx != idx {
		if s.idx > idx && s.calls+s.limited > 0 {
			return // the slot holds a newer bucket
		}
		*s = slot{idx: idx}
	}
	s.add(c)
	h.changes++
	for i := range h.memo {
		if m := &h.memo[i]; m.valid && m.lo <= idx && idx <= m.hi {
			m.c.add(c)
		}
	}
}

// sum totals the calls started from from to to, offsets from origin,
// by bucket: the buckets that hold from and to are both included. which
// names one of two memos, one per kind of evidence.
func (h *history) sum(which int, from, to int64) counts {
	lo, hi := h.bucket(from), h.bucket(to)
	if hi-lo >= historySlots {
		lo = hi - historySlots + 1
	}
	m := &h.memo[which]
	if !m.valid || lo < m.lo || hi < m.hi || lo > m.hi {
		// First use, time went back, or the window moved past the last
		// one: a full pass.
		*m = memoSum{valid: true, lo: lo, hi: hi, c: h.span(lo, hi, 1)}
		return m.c
	}
	// Slide: drop the buckets that left, add those that came in.
	m.c.add(h.span(m.lo, lo-1, -1))
	m.c.add(h.span(m.hi+1, hi, 1))
	m.lo, m.hi = lo, hi
	return m.c
}

// span totals the buckets lo..hi, times sign.
func (h *history) span(lo, hi int64, sign int) counts {
	var c counts
	for i := lo; i <= hi; i++ {
		if s := &h.ring[((i%historySlots)+historySlots)%historySlots]; s.idx == i {
			c.add(s.counts)
		}
	}
	c.calls, c.errors, c.slow, c.limited = sign*c.calls, sign*c.errors, sign*c.slow, sign*c.limited
	return c
}

// reset forgets every call.
func (h *history) reset() {
	h.memo = [2]memoSum{}
	h.changes++
	for i := range h.ring {
		h.ring[i] = slot{}
	}
}

// latencies keeps the last HealthySamples healthy latencies as a ring,
// and, while its p95 is being read, the same values sorted, so the p95
// is an index and a new sample costs two binary searches and a small
// memmove rather than a sort. A breaker whose threshold is fixed and
// whose p95 nobody reads (no hedging, no provider out of rotation)
// keeps the ring alone.
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
	kept   bool // sorted is kept: the p95 has been asked for lately
	unread int  // samples added since the p95 was last read
	marks  []mark
	markAt time.Time // when the current minute began
	// every is the minute between marks, memory BaselineMemory: both
	// time-scaled (Config.TimeScale).
	every, memory time.Duration
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
	case now.Sub(l.markAt) >= l.every:
		if l.len() >= enough {
			l.marks = append(l.marks, mark{now, l.p95()})
		}
		l.markAt = now
		l.marks = slices.DeleteFunc(l.marks, func(m mark) bool { return now.Sub(m.at) > l.memory })
	}
}

// baseline is the lowest of the current p95 and the p95s marked within
// BaselineMemory of now.
func (l *latencies) baseline(now time.Time) time.Duration {
	b := l.p95()
	for _, m := range l.marks {
		if now.Sub(m.at) <= l.memory {
			b = min(b, m.p95)
		}
	}
	return b
}

func (l *latencies) add(d time.Duration) {
	if len(l.ring) < HealthySamples {
		l.ring = append(l.ring, d)
		if l.kept {
			i, _ := slices.BinarySearch(l.sorted, d)
			l.sorted = slices.Insert(l.sorted, i, d)
		}
		return
	}
	old := l.ring[l.next]
	l.ring[l.next] = d
	l.next = (l.next + 1) % HealthySamples
	if !l.kept {
		return
	}
	if l.unread++; l.unread > unreadMax {
		l.kept = false // nobody reads it now: the next read sorts afresh
		return
	}
	// d replaces old in sorted: only the values between the two move,
	// one place towards old's.
	s := l.sorted
	i, _ := slices.BinarySearch(s, old)
	switch {
	case d > old:
		j, _ := slices.BinarySearch(s[i+1:], d)
		j += i + 1 // the first value not below d
		copy(s[i:j-1], s[i+1:j])
		s[j-1] = d
	case d < old:
		j, _ := slices.BinarySearch(s[:i], d)
		copy(s[j+1:i+1], s[j:i])
		s[j] = d
	}
}

// unreadMax is how many samples the sorted copy is kept through without
// a read of the p95. A reader that comes back after that pays one sort
// of HealthySamples values, once per unreadMax samples at most.
const unreadMax = 16 * HealthySamples

func (l *latencies) len() int { return len(l.ring) }

// p95 is the nearest-rank 95th percentile; 0 when empty.
func (l *latencies) p95() time.Duration {
	if !l.kept {
		l.sorted = append(l.sorted[:0], l.ring...)
		slices.Sort(l.sorted)
		l.kept = true
	}
	l.unread = 0
	n := len(l.sorted)
	if n == 0 {
		return 0
	}
	return l.sorted[(95*n+99)/100-1]
}
