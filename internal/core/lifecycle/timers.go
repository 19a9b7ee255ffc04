package lifecycle

import "time"

// Timer kinds index request.timerAt and request.timerIdx.
const (
	slowTimer    = iota // the call passes its breaker's slow threshold
	dropTimer           // the call passes its limit's own slow threshold
	deadTimer           // the request's deadline
	hedgeTimer          // time to send a hedge
	abandonTimer        // time to ask whether its provider can still answer in time
	holdTimer           // a held request's verdict is due (hold.go)
	numTimers
)

// unarmed is a request's timerIdx before any timer is armed.
var unarmed = func() (idx [numTimers]int) {
	for i := range idx {
		idx[i] = -1
	}
	return idx
}()

// inQueue is a request's timerIdx while its timer waits in a queue's
// FIFO rather than its heap.
const inQueue = -2

// armed reports whether q's timer of kind is armed.
func (q *request) armed(kind int) bool { return q.timerIdx[kind] != -1 }

// timerHeap holds the requests armed with one kind of timer, in order of
// when it fires, ties by ticket. Most timers are armed in that order
// already (a slow flag is its call's start plus the same threshold, a
// deadline its arrival plus the same patience), so a timer that falls
// due no earlier than the last one queued goes to the back of a FIFO, at
// no cost, and only one that would jump the queue goes to a binary heap.
// The next timer is the earlier of the FIFO's front and the heap's top.
// A disarmed timer leaves the heap at once, and the FIFO lazily: its
// entry stays until it reaches the front, and is dropped there, known
// stale by the arming it was queued under.
//
// It orders by each timer's offset from the first time it was given
// (request.timerKey), a plain integer, not by comparing time.Time values
// on every step: the same order, since Sub and Before read the same
// clock (the monotonic one when both times carry it).
type timerHeap struct {
	kind  int
	items []*request // the heap
	fifo  []queued   // in (key, id) order; entries before head are gone
	head  int
	arms  uint64    // armings so far, to tell a FIFO entry's from a later one
	base  time.Time // the first timer armed; keys are offsets from it
	based bool
}

// queued is a timer in the FIFO, under arming arm of its request.
type queued struct {
	q   *request
	key int64
	id  ID
	arm uint64
}

func (h *timerHeap) less(i, j int) bool {
	a, b := h.items[i].timerKey[h.kind], h.items[j].timerKey[h.kind]
	if a == b {
		return h.items[i].id < h.items[j].id
	}
	return a < b
}

func (h *timerHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].timerIdx[h.kind] = i
	h.items[j].timerIdx[h.kind] = j
}

func (h *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *timerHeap) down(i int) {
	n := len(h.items)
	for {
		l, m := 2*i+1, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r := l + 1; r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// push arms q's timer at at.
func (h *timerHeap) push(q *request, at time.Time) {
	q.timerAt[h.kind] = at
	if !h.based {
		h.base, h.based = at, true
	}
	key := int64(at.Sub(h.base))
	q.timerKey[h.kind] = key
	h.arms++
	q.timerArm[h.kind] = h.arms
	if n := len(h.fifo); n == h.head || key > h.fifo[n-1].key || (key == h.fifo[n-1].key && q.id > h.fifo[n-1].id) {
		q.timerIdx[h.kind] = inQueue
		h.fifo = append(h.fifo, queued{q: q, key: key, id: q.id, arm: h.arms})
		return
	}
	q.timerIdx[h.kind] = len(h.items)
	h.items = append(h.items, q)
	h.up(len(h.items) - 1)
}

// remove disarms q's timer, if armed.
func (h *timerHeap) remove(q *request) {
	i := q.timerIdx[h.kind]
	switch {
	case i == inQueue:
		q.timerIdx[h.kind] = -1 // its FIFO entry is now stale
		h.trim()
		return
	case i < 0:
		return
	}
	n := len(h.items) - 1
	if i != n {
		h.swap(i, n)
	}
	h.items[n] = nil
	h.items = h.items[:n]
	q.timerIdx[h.kind] = -1
	if i != n {
		h.down(i)
		h.up(i)
	}
}

// live reports whether a FIFO entry's timer is still armed as queued.
func (h *timerHeap) live(f *queued) bool {
	return f.q.timerIdx[h.kind] == inQueue && f.q.timerArm[h.kind] == f.arm
}

// trim drops the FIFO's stale entries from its front, and gives back
// the room before the front once it is most of the FIFO.
func (h *timerHeap) trim() {
	for h.head < len(h.fifo) && !h.live(&h.fifo[h.head]) {
		h.fifo[h.head] = queued{}
		h.head++
	}
	switch {
	case h.head == len(h.fifo):
		h.fifo, h.head = h.fifo[:0], 0
	case h.head > 1024 && 2*h.head > len(h.fifo):
		n := copy(h.fifo, h.fifo[h.head:])
		clear(h.fifo[n:])
		h.fifo, h.head = h.fifo[:n], 0
	}
}

// first is the earliest armed timer's request, or nil.
func (h *timerHeap) first() *request {
	var f, t *request
	if h.head < len(h.fifo) {
		f = h.fifo[h.head].q // trim keeps the front live
	}
	if len(h.items) > 0 {
		t = h.items[0]
	}
	switch {
	case f == nil:
		return t
	case t == nil:
		return f
	}
	if a, b := f.timerKey[h.kind], t.timerKey[h.kind]; a < b || (a == b && f.id < t.id) {
		return f
	}
	return t
}

func (h *timerHeap) due(now time.Time) bool {
	q := h.first()
	return q != nil && !q.timerAt[h.kind].After(now)
}

// pop disarms and returns the earliest timer's request.
func (h *timerHeap) pop() *request {
	q := h.first()
	h.remove(q)
	return q
}

func (h *timerHeap) next() (time.Time, bool) {
	q := h.first()
	if q == nil {
		return time.Time{}, false
	}
	return q.timerAt[h.kind], true
}

// Len is the number of armed timers.
func (h *timerHeap) Len() int {
	n := len(h.items)
	for i := h.head; i < len(h.fifo); i++ {
		if h.live(&h.fifo[i]) {
			n++
		}
	}
	return n
}
