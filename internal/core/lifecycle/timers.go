package lifecycle

import "time"

// Timer kinds index request.timerAt and request.timerIdx.
const (
	slowTimer    = iota // the call passes its breaker's slow threshold
	dropTimer           // the call passes its limit's own slow threshold
	deadTimer           // the request's deadline
	hedgeTimer          // time to send a hedge
	abandonTimer        // time to ask whether its provider can still answer in time
	numTimers
)

// unarmed is a request's timerIdx before any timer is armed.
var unarmed = func() (idx [numTimers]int) {
	for i := range idx {
		idx[i] = -1
	}
	return idx
}()

// timerHeap is a binary min-heap of requests by one kind of timer. Each
// request keeps its index in the heap, so a finished request leaves at
// once instead of lingering until its time comes. It is typed rather than
// built on container/heap because the simulator runs millions of requests
// through it.
//
// It orders by each timer's offset from the first time it was given
// (request.timerKey), a plain integer, not by comparing time.Time values
// on every step: the same order, since Sub and Before read the same
// clock (the monotonic one when both times carry it).
type timerHeap struct {
	kind  int
	items []*request
	base  time.Time // the first timer armed; keys are offsets from it
	based bool
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
	q.timerKey[h.kind] = int64(at.Sub(h.base))
	q.timerIdx[h.kind] = len(h.items)
	h.items = append(h.items, q)
	h.up(len(h.items) - 1)
}

// remove disarms q's timer, if armed.
func (h *timerHeap) remove(q *request) {
	i := q.timerIdx[h.kind]
	if i < 0 {
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

func (h *timerHeap) due(now time.Time) bool {
	return len(h.items) > 0 && !h.items[0].timerAt[h.kind].After(now)
}

// pop disarms and returns the earliest timer's request.
func (h *timerHeap) pop() *request {
	q := h.items[0]
	h.remove(q)
	return q
}

func (h *timerHeap) next() (time.Time, bool) {
	if len(h.items) == 0 {
		return time.Time{}, false
	}
	return h.items[0].timerAt[h.kind], true
}

// Len is the number of armed timers.
func (h *timerHeap) Len() int { return len(h.items) }
