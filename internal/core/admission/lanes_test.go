package admission

import (
	"testing"
	"time"
)

// A lane caps its own requests in flight: with the large-context lane
// full, another large request waits, and a small one behind it starts.
func TestLaneCapsItsRequests(t *testing.T) {
	h := newHarness(t, Config{Global: Fixed(10), MaxDepth: 10, MaxWait: time.Minute, Lanes: []Limiter{Fixed(2)}})
	large := Request{Priority: Interactive, Scope: NoScope, Lane: 1}
	a := h.admit(large, Admitted)
	h.admit(large, Admitted)
	c := h.admit(large, Queued)
	h.admit(Request{Priority: Interactive, Scope: NoScope}, Admitted) // not in the lane
	if s := h.snap(); s.InFlight != 3 {
		t.Fatalf("in flight %d, want 3", s.InFlight)
	}
	h.wantGranted(h.release(a.Ticket), c.Ticket)
}

// Background leaves Headroom slots for the classes above it, and waits
// its own, longer, MaxWaitFor.
func TestBatchUsesLeftoverCapacity(t *testing.T) {
	cfg := Config{Global: Fixed(4), MaxDepth: 10, MaxWait: time.Second}
	cfg.Headroom[Background] = 1
	cfg.MaxWaitFor[Background] = 5 * time.Minute
	h := newHarness(t, cfg)
	bg := Request{Priority: Background, Scope: NoScope}
	for range 3 {
		h.admit(bg, Admitted)
	}
	w := h.admit(bg, Queued) // the fourth slot is interactive's
	h.admit(Request{Priority: Interactive, Scope: NoScope}, Admitted)
	h.at(time.Minute)
	if got := h.c.Expire(h.now); len(got) != 0 {
		t.Fatalf("a background waiter expired after a minute: %+v", got)
	}
	h.at(5*time.Minute + time.Millisecond)
	if got := h.c.Expire(h.now); len(got) != 1 || got[0].Ticket != w.Ticket {
		t.Fatalf("after five minutes: %+v, want the background waiter refused", got)
	}
}

// A lane's requests wait the lane's own MaxWait, not their class's.
func TestLaneMaxWait(t *testing.T) {
	h := newHarness(t, Config{Global: Fixed(10), MaxDepth: 10, MaxWait: time.Second,
		Lanes: []Limiter{Fixed(1)}, LaneMaxWait: []time.Duration{30 * time.Second}})
	large := Request{Priority: Interactive, Scope: NoScope, Lane: 1}
	h.admit(large, Admitted)
	w := h.admit(large, Queued)
	h.at(29 * time.Second)
	if got := h.c.Expire(h.now); len(got) != 0 {
		t.Fatalf("a lane waiter expired at its class's max_wait: %+v", got)
	}
	h.at(30*time.Second + time.Millisecond)
	if got := h.c.Expire(h.now); len(got) != 1 || got[0].Ticket != w.Ticket {
		t.Fatalf("after the lane's max_wait: %+v, want the waiter refused", got)
	}
}

// With fairness between tenants, a freed slot goes to the tenant with
// the fewest requests in flight: a flood waits behind itself.
func TestFairTenants(t *testing.T) {
	h := newHarness(t, Config{Global: Fixed(2), MaxDepth: 10, MaxWait: time.Minute, FairTenants: true})
	flood := Request{Priority: Interactive, Scope: NoScope, Tenant: 1}
	a1 := h.admit(flood, Admitted)
	h.admit(flood, Admitted)
	h.admit(flood, Queued)
	h.admit(flood, Queued)
	b := h.admit(Request{Priority: Interactive, Scope: NoScope, Tenant: 2}, Queued)
	// Tenant 1 holds both slots and has two waiters ahead of b: b goes first.
	h.wantGranted(h.release(a1.Ticket), b.Ticket)
}
