package sim

import (
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/tickets"
)

// heldTable is what a replica holds: its requests by engine ticket. An
// engine numbers its tickets one after another, so a table of slots by
// ticket (package tickets) serves instead of a map.
type heldTable struct {
	t tickets.Table[lifecycle.ID, *request]
}

// reset empties the table, as a restarted process holds nothing.
func (h *heldTable) reset() { h.t = tickets.Table[lifecycle.ID, *request]{} }

// len is the number of requests held.
func (h *heldTable) len() int { return h.t.Len() }

func (h *heldTable) get(id lifecycle.ID) *request {
	q, _ := h.t.Get(id)
	return q
}

func (h *heldTable) put(id lifecycle.ID, q *request) { h.t.Put(id, q) }

func (h *heldTable) delete(id lifecycle.ID) { h.t.Delete(id) }

// all appends every request held to qs, in no particular order.
func (h *heldTable) all(qs []*request) []*request {
	h.t.All(func(_ lifecycle.ID, q *request) bool {
		qs = append(qs, q)
		return true
	})
	return qs
}
