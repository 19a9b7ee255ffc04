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
