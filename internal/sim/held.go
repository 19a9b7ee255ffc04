package sim

import "github.com/sluice-gw/sluice/internal/core/lifecycle"

// heldTable is what a replica holds: its requests by engine ticket, a
// map with the semantics of map[lifecycle.ID]*request. An engine numbers
// its tickets one after another, so a request sits in the slot its
// ticket's low bits name, and only one whose slot is still taken by an
// older request still held goes to the overflow map.
type heldTable struct {
	slots []heldSlot
	more  map[lifecycle.ID]*request
	n     int
}

type heldSlot struct {
	id lifecycle.ID
	q  *request // nil: free
}

const heldSlots = 4096 // four seconds of tickets at 1,000 req/s

// reset empties the table, as a restarted process holds nothing.
func (h *heldTable) reset() {
	if h.slots == nil {
		h.slots = make([]heldSlot, heldSlots)
	} else {
		clear(h.slots)
	}
	h.more, h.n = nil, 0
}

// len is the number of requests held.
func (h *heldTable) len() int { return h.n }

func (h *heldTable) get(id lifecycle.ID) *request {
	if s := &h.slots[id&(heldSlots-1)]; s.q != nil && s.id == id {
		return s.q
	}
	if len(h.more) > 0 {
		return h.more[id]
	}
	return nil
}

func (h *heldTable) put(id lifecycle.ID, q *request) {
	if len(h.more) > 0 {
		if _, ok := h.more[id]; ok {
			h.more[id] = q
			return
		}
	}
	s := &h.slots[id&(heldSlots-1)]
	switch {
	case s.q == nil:
		s.id, s.q = id, q
		h.n++
	case s.id == id:
		s.q = q
	default:
		if h.more == nil {
			h.more = make(map[lifecycle.ID]*request)
		}
		h.more[id] = q
		h.n++
	}
}

func (h *heldTable) delete(id lifecycle.ID) {
	if s := &h.slots[id&(heldSlots-1)]; s.q != nil && s.id == id {
		*s = heldSlot{}
		h.n--
		return
	}
	if _, ok := h.more[id]; ok {
		delete(h.more, id)
		h.n--
	}
}

// all appends every request held to qs, in no particular order.
func (h *heldTable) all(qs []*request) []*request {
	for _, s := range h.slots {
		if s.q != nil {
			qs = append(qs, s.q)
		}
	}
	for _, q := range h.more {
		qs = append(qs, q)
	}
	return qs
}
