package admission

import (
	"testing"
	"time"
)

// A limit at None admits nothing: requests wait as at a full limit, a
// scope at None holds back only its own requests, critical ones still
// use the reserved slots, and once the limit gives room a Pump starts
// the waiters. Zero stays unlimited.
func TestLimitNoneAdmitsNothing(t *testing.T) {
	global, scope := &dial{n: None}, &dial{n: 2}
	h := newHarness(t, Config{Global: global, Scopes: []Limiter{scope, &dial{n: None}},
		MaxDepth: 10, MaxWait: time.Second, Reserved: 1})
	first := h.admit(inter, Queued)
	h.admit(crit, Admitted) // a reserved slot
	h.admit(crit, Queued)
	if s := h.snap(); s.Limit != 0 || s.InFlight != 1 {
		t.Fatalf("snapshot %+v: want limit shown as 0, one critical call in flight", s)
	}
	global.n = 5
	h.wantGranted(h.c.Pump(h.now), first.Ticket+2, first.Ticket)
	h.admit(req(Interactive, 1), Queued) // its scope is at None
	h.admit(req(Interactive, 0), Admitted)
	if h.c.Room(1) {
		t.Error("a scope at None has room")
	}
	global.n = 0
	for range 3 {
		h.admit(inter, Admitted) // unlimited
	}
}
