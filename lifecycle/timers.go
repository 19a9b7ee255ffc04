package lifecycle

import (
	"container/heap"
	"time"
)

// timerHeap orders requests by one of their times. Each request keeps its
// index in the heap, so a finished request leaves at once instead of
// lingering until its time comes.
type timerHeap struct {
	items []*request
	at    func(*request) time.Time
	idx   func(*request) *int
}

func (h *timerHeap) Len() int { return len(h.items) }
func (h *timerHeap) Less(i, j int) bool {
	a, b := h.at(h.items[i]), h.at(h.items[j])
	if a.Equal(b) {
		return h.items[i].id < h.items[j].id
	}
	return a.Before(b)
}
func (h *timerHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.idx(h.items[i]) = i
	*h.idx(h.items[j]) = j
}
func (h *timerHeap) Push(x any) {
	q := x.(*request)
	*h.idx(q) = len(h.items)
	h.items = append(h.items, q)
}
func (h *timerHeap) Pop() any {
	n := len(h.items) - 1
	q := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	*h.idx(q) = -1
	return q
}

func (h *timerHeap) push(q *request) { heap.Push(h, q) }

func (h *timerHeap) remove(q *request) {
	if i := *h.idx(q); i >= 0 {
		heap.Remove(h, i)
	}
}

func (h *timerHeap) due(now time.Time) bool {
	return len(h.items) > 0 && !h.at(h.items[0]).After(now)
}

func (h *timerHeap) pop() *request { return heap.Pop(h).(*request) }

func (h *timerHeap) next() (time.Time, bool) {
	if len(h.items) == 0 {
		return time.Time{}, false
	}
	return h.at(h.items[0]), true
}
