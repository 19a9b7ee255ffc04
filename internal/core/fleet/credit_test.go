package fleet

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/quota"
)

// One budget's credit through its life, step by step: the store's
// first answer, the refills a rising rate calls for, lending, settling,
// a refusal's backoff, the idle return and forgetting.
func TestCreditLife(t *testing.T) {
	l := quota.Limits{quota.Requests: {PerMinute: 6000, Burst: 1000}} // cap 20
	one := [3]int64{1, 0, 0}
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	c := NewCredit(l)
	if CreditCap(l[0]) != 20 {
		t.Fatalf("cap %d", CreditCap(l[0]))
	}
	if c.Covers(one) || c.Known() {
		t.Fatal("credit covers a take before the store answered")
	}
	// The store answers a take: the rate is 1/τ = 5 a second; the
	// target is its 100 ms (0), at least the last cost (1).
	c.Saw([3]quota.Status{{Limit: 6000, Burst: 1000, Remaining: 999}}, t0)
	c.Note(t0, one)
	chunk, ok := c.Refill(t0)
	if !ok || chunk != one {
		t.Fatalf("first refill: %v %v, want [1 0 0]", chunk, ok)
	}
	if _, again := c.Refill(t0); again {
		t.Fatal("a second refill while one is in flight")
	}
	if c.Covers(one) {
		t.Fatal("credit covers a take before its refill came back")
	}
	c.Refilled(ms(1), chunk, quota.Verdict{OK: true}, [3]quota.Status{{Limit: 6000, Burst: 1000, Remaining: 998}}, ms(1), false, CreditIdle)
	if !c.Covers(one) || c.Covers([3]int64{2, 0, 0}) {
		t.Fatal("credit of 1 does not cover exactly 1")
	}
	// A fast burst of takes from the credit and the store: the rate
	// climbs and so does the target, up to the cap.
	c.Lend(ms(2), one)
	for range 200 {
		c.Note(ms(2), one)
	}
	chunk, ok = c.Refill(ms(2))
	if !ok || chunk != [3]int64{20, 0, 0} {
		t.Fatalf("refill at a high rate: %v %v, want the cap, 20", chunk, ok)
	}
	// Refused: no refill before its RetryAfter.
	c.Refilled(ms(3), chunk, quota.Verdict{RetryAfter: 40 * time.Millisecond}, [3]quota.Status{{Limit: 6000, Burst: 1000}}, ms(3), false, CreditIdle)
	if _, ok := c.Refill(ms(42)); ok {
		t.Fatal("refill before the refusal's RetryAfter")
	}
	if chunk, ok = c.Refill(ms(43)); !ok {
		t.Fatal("no refill after the refusal's RetryAfter")
	}
	c.Refilled(ms(44), chunk, quota.Verdict{OK: true}, [3]quota.Status{{Limit: 6000, Burst: 1000, Remaining: 980}}, ms(44), false, CreditIdle)
	if cr, _, _ := c.Held(); cr != [3]int64{20, 0, 0} {
		t.Fatalf("credit %v, want 20", cr)
	}
	// Settle: a take of 5 that used 2 (refund 3, up to what was lent),
	// then one of 1 that used 4 (overrun 3, paid from the credit).
	c.Lend(ms(45), [3]int64{5, 0, 0})
	c.Settle([3]int64{5, 0, 0}, [3]int64{2, 0, 0})
	if cr, p, _ := c.Held(); cr != [3]int64{18, 0, 0} || p != ([3]int64{}) {
		t.Fatalf("after a refund: credit %v pending %v, want 18, 0", cr, p)
	}
	c.Settle(one, [3]int64{4, 0, 0})
	if cr, _, _ := c.Held(); cr != [3]int64{15, 0, 0} {
		t.Fatalf("after an overrun: credit %v, want 15", cr)
	}
	// An overrun beyond the credit is owed.
	c.Settle(one, [3]int64{21, 0, 0})
	if cr, p, _ := c.Held(); cr != ([3]int64{}) || p != [3]int64{5, 0, 0} {
		t.Fatalf("overrun beyond the credit: credit %v pending %v, want 0, 5", cr, p)
	}
	if st := c.Status(ms(44)); st[0].Remaining != 975 {
		t.Fatalf("status %+v: want the store's 980 less 5 owed", st[0])
	}
	// A refund goes back to the credit only up to what was lent from
	// it (3 still out); the rest is owed back.
	c.Settle([3]int64{30, 0, 0}, [3]int64{0, 0, 0})
	if cr, p, _ := c.Held(); cr != [3]int64{3, 0, 0} || p != [3]int64{-22, 0, 0} {
		t.Fatalf("large refund: credit %v pending %v, want 3, -22", cr, p)
	}
	// Swept within CreditIdle of the last take: only what is owed goes.
	cr, p, _ := c.Held()
	flush, drop := c.Sweep(ms(46), CreditIdle, false)
	if flush != p || drop {
		t.Fatalf("sweep: %v %v, want the pending %v", flush, drop, p)
	}
	if got, _, _ := c.Held(); got != cr {
		t.Fatal("a busy budget's credit was given back")
	}
	// Idle: the credit goes back too.
	flush, drop = c.Sweep(ms(45).Add(CreditIdle), CreditIdle, false)
	if flush != [3]int64{-cr[0], 0, 0} || drop {
		t.Fatalf("idle sweep: %v %v, want the credit back, -%d", flush, drop, cr[0])
	}
	if _, drop = c.Sweep(ms(45).Add(20*CreditIdle-time.Nanosecond), CreditIdle, false); drop {
		t.Fatal("forgotten before 20 idles")
	}
	if _, drop = c.Sweep(ms(45).Add(20*CreditIdle), CreditIdle, false); !drop {
		t.Fatal("not forgotten after 20 idles with nothing held")
	}
}

// A budget whose cap is below one take's cost never gets credit, and a
// lost refill loses its chunk and backs off.
func TestCreditNoneAndLost(t *testing.T) {
	small := quota.Limits{quota.Requests: {PerMinute: 60}} // cap 1
	c := NewCredit(small)
	c.Saw([3]quota.Status{{Limit: 60, Burst: 60, Remaining: 58}}, t0)
	c.Note(t0, [3]int64{2, 0, 0})
	if _, ok := c.Refill(t0); ok {
		t.Fatal("credit for a take above the cap")
	}
	c.Note(t0, [3]int64{1, 0, 0})
	chunk, ok := c.Refill(t0)
	if !ok {
		t.Fatal("no refill")
	}
	c.Refilled(t0, chunk, quota.Verdict{}, [3]quota.Status{}, time.Time{}, true, CreditIdle)
	if cr, _, r := c.Held(); cr != ([3]int64{}) || r {
		t.Fatalf("lost refill: credit %v, refilling %v", cr, r)
	}
	if _, ok := c.Refill(t0.Add(CreditIdle - 1)); ok {
		t.Fatal("refill before the backoff after a lost one")
	}
}

func TestUnits(t *testing.T) {
	if got := Units(quota.Cost{Requests: 1, InputTokens: -5, OutputTokens: 7}); got != [3]int64{1, 0, 7} {
		t.Fatal(got)
	}
}
