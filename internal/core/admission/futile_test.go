package admission

import (
	"testing"
	"time"
)

// A class refused at least as often as it is admitted gets refusals
// marked Futile, once there is evidence; a class that is mostly served,
// or a Core without FailFast, never does.
func TestFutileMarksRefusalsOfAMostlyRefusedClass(t *testing.T) {
	for _, failFast := range []bool{true, false} {
		h := newHarness(t, Config{Global: Fixed(1), FailFast: failFast})
		h.admit(inter, Admitted) // holds the only slot
		var last Refusal
		for i := range futileEvidence + 5 {
			h.at(time.Duration(i) * 10 * time.Millisecond)
			last = h.admit(bg, Rejected).Refusal
			if i < futileEvidence-1 && last.Futile {
				t.Fatalf("refusal %d marked Futile before there was evidence", i+1)
			}
		}
		if last.Futile != failFast {
			t.Errorf("FailFast %v: after %d refusals in a row, Futile = %v", failFast, futileEvidence+5, last.Futile)
		}
		if r, refused := h.c.Check(h.now, bg); !refused || r.Futile != failFast {
			t.Errorf("FailFast %v: Check = %+v, refused %v", failFast, r, refused)
		}
	}

	// Interactive refused one request in four: a retry is likely served,
	// so its refusals are never futile.
	h := newHarness(t, Config{Global: Fixed(1), FailFast: true})
	var tk Ticket
	for i := range 40 {
		h.at(time.Duration(i) * 100 * time.Millisecond)
		if i%4 == 0 {
			if tk != 0 {
				h.c.Release(h.now, tk)
			}
			tk = h.admit(inter, Admitted).Ticket
			continue
		}
		if i%4 == 1 {
			if r := h.admit(inter, Rejected).Refusal; r.Futile {
				t.Fatalf("request %d: a class refused one time in four is not futile, got %+v", i, r)
			}
			continue
		}
		h.c.Release(h.now, tk)
		tk = h.admit(inter, Admitted).Ticket
	}
}

// A class refused in nearly every second of the window is saturated:
// however small its refused share, a retry only takes the place of
// another request, so its refusals say not to retry. More seconds
// without a refusal than saturatedQuiet (a burst, not demand outrunning
// the gateway) leave retries encouraged.
func TestSaturatedClassRefusalsAreFutile(t *testing.T) {
	for _, gap := range []bool{false, true} {
		h := newHarness(t, Config{Global: Fixed(1), FailFast: true})
		tk := h.admit(inter, Admitted).Ticket
		var last Refusal
		// Four requests a second, one refused; a gap skips the refusals
		// of saturatedQuiet+1 seconds inside the window.
		for i := range 4 * (futileBuckets + 2) {
			h.at(time.Duration(i) * futileBucket / 4)
			if i%4 != 1 {
				h.c.Release(h.now, tk)
				tk = h.admit(inter, Admitted).Ticket
				continue
			}
			if sec := i / 4; gap && sec >= 4 && sec <= 4+saturatedQuiet {
				continue
			}
			last = h.admit(inter, Rejected).Refusal
		}
		if last.Futile == gap {
			t.Errorf("gap %v: refused one in four in every second but %v: Futile = %v", gap, gap, last.Futile)
		}
	}
}

// The window forgets: ten seconds after the refusals stop, a refusal is
// no longer futile.
func TestFutileForgets(t *testing.T) {
	h := newHarness(t, Config{Global: Fixed(1), FailFast: true})
	tk := h.admit(inter, Admitted).Ticket
	for range futileEvidence * 2 {
		h.admit(bg, Rejected)
	}
	if !h.admit(bg, Rejected).Refusal.Futile {
		t.Fatal("not futile after a run of refusals")
	}
	h.at(futileBuckets*futileBucket + time.Second)
	h.c.Release(h.now, tk)
	h.admit(inter, Admitted)
	if r := h.admit(bg, Rejected).Refusal; r.Futile {
		t.Fatalf("still futile %s later: %+v", futileBuckets*futileBucket, r)
	}
}

// When most of a class's waiters leave the queue unserved, the next one
// is refused at the door (class_starved) instead of waiting to be
// refused; without FailFast it waits.
func TestStarvedClassRefusedAtTheDoor(t *testing.T) {
	for _, failFast := range []bool{true, false} {
		h := newHarness(t, Config{Global: Fixed(1), MaxDepth: 50, MaxWait: 100 * time.Millisecond, FailFast: failFast})
		h.admit(inter, Admitted) // never released: every waiter runs out
		for i := range futileEvidence {
			h.at(time.Duration(i) * 200 * time.Millisecond)
			h.c.Expire(h.now)
			h.admit(bg, Queued)
		}
		h.at(futileEvidence * 200 * time.Millisecond)
		h.c.Expire(h.now)
		res := h.c.Admit(h.now, bg)
		switch {
		case failFast && (res.Verdict != Rejected || res.Refusal.Reason != ReasonStarved):
			t.Errorf("FailFast: a starved class's request got %s (%+v), want refused as %s", verdictName(res.Verdict), res.Refusal, ReasonStarved)
		case !failFast && res.Verdict != Queued:
			t.Errorf("without FailFast: %s, want queued", verdictName(res.Verdict))
		}
	}
}

// When the classes above take the whole measured drain, a background
// request would only wait to be refused: it is refused at the door,
// unless the host already degraded it. Interactive, which nobody
// overtakes, still waits.
func TestOvertakenClassRefusedAtTheDoor(t *testing.T) {
	h := newHarness(t, Config{Global: Fixed(2), MaxDepth: 50, MaxWait: time.Second, FailFast: true})
	var held []Ticket
	for i := range 50 { // 5 s of interactive work taking both slots, 20 a second
		h.at(time.Duration(i) * 100 * time.Millisecond)
		for _, tk := range held {
			h.c.Release(h.now, tk)
		}
		held = held[:0]
		for range 2 {
			held = append(held, h.admit(inter, Admitted).Ticket)
		}
	}
	res := h.c.Admit(h.now, bg)
	if res.Verdict != Rejected || res.Refusal.Reason != ReasonStarved {
		t.Fatalf("background under a full interactive drain: %s (%+v), want refused as %s", verdictName(res.Verdict), res.Refusal, ReasonStarved)
	}
	if res := h.c.Admit(h.now, Request{Priority: Background, Scope: NoScope, Degraded: true}); res.Verdict != Queued {
		t.Errorf("a degraded background request: %s, want queued", verdictName(res.Verdict))
	}
	h.admit(inter, Queued)
}

// Served fairly, one tenant's flood does not turn another tenant away:
// the flooding tenant's waiters running out unserved make its own next
// request refused at the door and told not to retry, while a quiet
// tenant's request of the same class still waits (fairness puts it
// ahead of the flood). Without fairness the class is one queue, and
// both are judged on it.
func TestFutileJudgedPerTenantWhenFair(t *testing.T) {
	for _, fair := range []bool{true, false} {
		h := newHarness(t, Config{Global: Fixed(1), MaxDepth: 50, MaxWait: 100 * time.Millisecond, FailFast: true, FairTenants: fair})
		hog := Request{Priority: Background, Scope: NoScope, Tenant: 1}
		quiet := Request{Priority: Background, Scope: NoScope, Tenant: 2}
		h.admit(Request{Priority: Interactive, Scope: NoScope, Tenant: 3}, Admitted) // never released
		for i := range futileEvidence {
			h.at(time.Duration(i) * 200 * time.Millisecond)
			h.c.Expire(h.now)
			h.admit(hog, Queued)
		}
		h.at(futileEvidence * 200 * time.Millisecond)
		h.c.Expire(h.now)
		res := h.c.Admit(h.now, hog)
		if res.Verdict != Rejected || res.Refusal.Reason != ReasonStarved || !res.Refusal.Futile {
			t.Fatalf("fair %v: the flooding tenant's request got %s (%+v), want refused as %s and futile", fair, verdictName(res.Verdict), res.Refusal, ReasonStarved)
		}
		r, refused := h.c.Check(h.now, quiet)
		res = h.c.Admit(h.now, quiet)
		switch {
		case fair && (refused || res.Verdict != Queued):
			t.Errorf("fair: the quiet tenant's request got %s (Check: %+v), want queued", verdictName(res.Verdict), r)
		case !fair && (!refused || res.Verdict != Rejected || !res.Refusal.Futile):
			t.Errorf("unfair: the quiet tenant's request got %s (%+v), want refused as the class is", verdictName(res.Verdict), res.Refusal)
		}
	}
}

// Served fairly, a quiet tenant's request waits behind the waiters that
// fairness serves before it, not behind a flooding tenant's backlog: the
// flood's own requests are refused as overdue once its backlog outlasts
// their wait, while the quiet tenant's still queue. Without fairness
// both wait behind the whole class.
func TestOverdueCountsOnlyTheWaitersServedFirst(t *testing.T) {
	for _, fair := range []bool{true, false} {
		h := newHarness(t, Config{Global: Fixed(2), MaxDepth: 100, MaxWait: time.Second, FailFast: true, FairTenants: fair})
		inter := Request{Priority: Interactive, Scope: NoScope, Tenant: 3}
		hog := Request{Priority: Background, Scope: NoScope, Tenant: 1}
		quiet := Request{Priority: Background, Scope: NoScope, Tenant: 2}
		var held []Ticket
		for i := range 50 { // 5 s: each slot drains ten a second, half the drain interactive
			h.at(time.Duration(i) * 100 * time.Millisecond)
			for _, tk := range held {
				h.c.Release(h.now, tk)
			}
			held = append(held[:0], h.admit(inter, Admitted).Ticket, h.admit(hog, Admitted).Ticket)
		}
		queued := 0
		for ; queued < 50; queued++ {
			if res := h.c.Admit(h.now, hog); res.Verdict != Queued {
				if res.Refusal.Reason != ReasonStarved {
					t.Fatalf("fair %v: the flood's waiter %d refused as %s, want %s", fair, queued+1, res.Refusal.Reason, ReasonStarved)
				}
				break
			}
		}
		if queued == 0 || queued == 50 {
			t.Fatalf("fair %v: the flood queued %d before it was overdue, want some and not all", fair, queued)
		}
		res := h.c.Admit(h.now, quiet)
		switch {
		case fair && res.Verdict != Queued:
			t.Errorf("fair: the quiet tenant's request behind the flood's %d waiters got %s (%+v), want queued", queued, verdictName(res.Verdict), res.Refusal)
		case !fair && res.Verdict != Rejected:
			t.Errorf("unfair: the quiet tenant's request behind %d waiters got %s, want refused", queued, verdictName(res.Verdict))
		}
	}
}
