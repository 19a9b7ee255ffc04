package quota

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustNew(t testing.TB, l Limits) *Budget {
	t.Helper()
	b, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// one returns Limits with only d limited.
func one(d Dimension, per, burst int64) Limits {
	var l Limits
	l[d] = Limit{PerMinute: per, Burst: burst}
	return l
}

func costIn(d Dimension, n int64) Cost {
	var c Cost
	switch d {
	case Requests:
		c.Requests = n
	case InputTokens:
		c.InputTokens = n
	case OutputTokens:
		c.OutputTokens = n
	}
	return c
}

func ok(t *testing.T, v Verdict, what string) {
	t.Helper()
	if !v.OK {
		t.Fatalf("%s: refused %+v, want OK", what, v)
	}
}

func refused(t *testing.T, v Verdict, d Dimension, after time.Duration, what string) {
	t.Helper()
	if want := (Verdict{Dimension: d, RetryAfter: after}); v != want {
		t.Fatalf("%s: %+v, want %+v", what, v, want)
	}
}

// ceilDiv is ⌈a/b⌉ for small non-negative a and positive b.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func TestDimensionString(t *testing.T) {
	for d, want := range map[Dimension]string{Requests: "requests", InputTokens: "input_tokens", OutputTokens: "output_tokens", 7: "unknown"} {
		if got := d.String(); got != want {
			t.Errorf("Dimension(%d) = %q, want %q", d, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		l  Limit
		ok bool
	}{
		{Limit{}, true},
		{Limit{PerMinute: 1}, true},
		{Limit{PerMinute: math.MaxInt64}, true},
		{Limit{PerMinute: math.MaxInt64, Burst: math.MaxInt64}, true},
		{Limit{PerMinute: 1, Burst: 100 * 365 * 24 * 60}, true}, // exactly a century
		{Limit{PerMinute: 1, Burst: 100*365*24*60 + 1}, false},
		{Limit{PerMinute: 1, Burst: math.MaxInt64}, false},
		{Limit{PerMinute: -1}, false},
		{Limit{PerMinute: 5, Burst: -1}, false},
		{Limit{Burst: 5}, false},
	} {
		for d := range Dimension(numDimensions) {
			var l Limits
			l[d] = c.l
			_, err := New(l)
			if (err == nil) != c.ok {
				t.Errorf("%s %+v: err %v, want ok=%v", d, c.l, err, c.ok)
			}
		}
	}
}

func TestZeroBudgetIsUnlimited(t *testing.T) {
	var b Budget
	for i := range 1000 {
		ok(t, b.Take(t0, Cost{Requests: 1e9, InputTokens: math.MaxInt64, OutputTokens: 1}), "take")
		b.Settle(t0, Cost{}, Cost{OutputTokens: int64(i) << 40})
	}
	if s := b.Status(t0); s != [3]Status{} {
		t.Fatalf("status %+v, want zero (unlimited)", s)
	}
}

// TestSustainedRate drives a load that is always waiting: each refused
// cost is retried at exactly its RetryAfter. The first burst passes at
// once; then every minute holds exactly L, for the minutes counted from
// the start and, for single units, for minute-long stretches starting
// anywhere after the burst.
func TestSustainedRate(t *testing.T) {
	for _, c := range []struct{ per, cost int64 }{
		{1, 1}, {7, 1}, {60, 1}, {997, 1}, {20_011, 1},
		{10_000_000, 500}, {9_000_000_000_000, 450_000_000}, // T below a nanosecond
	} {
		for _, d := range []Dimension{Requests, OutputTokens} {
			b := mustNew(t, one(d, c.per, 0))
			times := make([]time.Duration, 0, 11*c.per/c.cost+1) // since t0
			now := t0
			for end := t0.Add(11 * time.Minute); now.Before(end); {
				v := b.Take(now, costIn(d, c.cost))
				if v.OK {
					times = append(times, now.Sub(t0))
					continue
				}
				if v.Never || v.RetryAfter <= 0 || v.Dimension != d {
					t.Fatalf("%s L=%d: %+v", d, c.per, v)
				}
				// Not a nanosecond earlier.
				if w := b.Take(now.Add(v.RetryAfter-1), costIn(d, c.cost)); w.OK || w.RetryAfter != 1 {
					t.Fatalf("%s L=%d: 1ns before RetryAfter: %+v", d, c.per, w)
				}
				now = now.Add(v.RetryAfter)
			}
			// times is sorted: count by the first index at or after each end.
			first := func(x time.Duration) int {
				i, _ := slices.BinarySearch(times, x)
				return i
			}
			count := func(from time.Duration) int64 {
				return int64(first(from+time.Minute)-first(from)) * c.cost
			}
			if got := int64(first(1)) * c.cost; got != c.per {
				t.Fatalf("%s L=%d: initial burst %d, want %d", d, c.per, got, c.per)
			}
			for m := 1; m <= 10; m++ {
				if got := count(time.Duration(m) * time.Minute); got != c.per {
					t.Fatalf("%s L=%d cost %d: minute %d holds %d, want %d", d, c.per, c.cost, m, got, c.per)
				}
			}
			if c.cost != 1 {
				continue
			}
			for _, off := range []time.Duration{1, 7, time.Second / 3, 17*time.Second + 1, 59*time.Second + 999_999_999, 9*time.Minute + 1} {
				if got := count(off); got != c.per {
					t.Fatalf("%s L=%d: the minute from +%v holds %d, want %d", d, c.per, off, got, c.per)
				}
			}
		}
	}
}

// TestBurstThenSpaced: B from idle at once, then exactly T apart, each
// instant ⌈k·T⌉ from the start, never an accumulated rounding.
func TestBurstThenSpaced(t *testing.T) {
	for _, c := range []struct{ per, burst int64 }{{60, 5}, {7, 3}, {7, 0}, {1, 1}, {3, 10}, {1000, 1}} {
		b := mustNew(t, one(Requests, c.per, c.burst))
		burst := c.burst
		if burst == 0 {
			burst = c.per
		}
		for i := range burst {
			ok(t, b.Take(t0, Cost{Requests: 1}), fmt.Sprint("burst ", i))
		}
		for k := int64(1); k <= 50; k++ {
			at := t0.Add(time.Duration(ceilDiv(k*int64(time.Minute), c.per)))
			now := at.Add(-1)
			refused(t, b.Take(now, Cost{Requests: 1}), Requests, 1, "1ns early")
			ok(t, b.Take(at, Cost{Requests: 1}), "on time")
			// The next one waits exactly until the next instant.
			next := t0.Add(time.Duration(ceilDiv((k+1)*int64(time.Minute), c.per)))
			refused(t, b.Take(at, Cost{Requests: 1}), Requests, next.Sub(at), "next")
		}
	}
}

// TestNoDoubleAtMinuteBoundary: where a fixed window would pass 2L across
// a minute boundary within two seconds, GCRA passes at most B + L·d/1min.
func TestNoDoubleAtMinuteBoundary(t *testing.T) {
	const per = 600 // T = 100ms
	b := mustNew(t, one(Requests, per, 0))
	start := t0.Add(59 * time.Second) // idle until just before a boundary
	passed := 0
	for now := start; now.Before(start.Add(2 * time.Second)); now = now.Add(time.Millisecond) {
		for b.Take(now, Cost{Requests: 1}).OK {
			passed++
		}
	}
	// [59s, 61s): 600 at once, then one every 100ms after 59s: 19 more.
	if want := per + 19; passed != want {
		t.Fatalf("passed %d across the boundary, want %d (a fixed window: %d)", passed, want, 2*per)
	}
}

func TestAboveBurstNeverPasses(t *testing.T) {
	l := Limits{
		Requests:     {PerMinute: 10},
		InputTokens:  {PerMinute: 1000, Burst: 500},
		OutputTokens: {PerMinute: 1000},
	}
	b := mustNew(t, l)
	want := Verdict{Dimension: InputTokens, Never: true}
	if v := b.Take(t0, Cost{Requests: 1, InputTokens: 501}); v != want {
		t.Fatalf("%+v, want %+v", v, want)
	}
	if v := b.Take(t0.Add(24*time.Hour), Cost{Requests: 1, InputTokens: 501}); v != want {
		t.Fatalf("a day later: %+v, want %+v", v, want)
	}
	// Never wins over a dimension that only asks to wait.
	for range 10 {
		ok(t, b.Take(t0.Add(24*time.Hour), Cost{Requests: 1}), "fill requests")
	}
	if v := b.Take(t0.Add(24*time.Hour), Cost{Requests: 1, InputTokens: 501, OutputTokens: 2000}); v != want {
		t.Fatalf("with requests exhausted and output above burst: %+v, want %+v", v, want)
	}
	// Nothing was taken by the refusals.
	s := b.Status(t0.Add(24 * time.Hour))
	if s[InputTokens].Remaining != 500 || s[OutputTokens].Remaining != 1000 || s[Requests].Remaining != 0 {
		t.Fatalf("status %+v", s)
	}
	// Exactly the burst passes.
	ok(t, b.Take(t0.Add(24*time.Hour+6*time.Second), Cost{Requests: 1, InputTokens: 500}), "exactly the burst")
}

func TestAllOrNothing(t *testing.T) {
	b := mustNew(t, Limits{Requests: {PerMinute: 60}, OutputTokens: {PerMinute: 6000}})
	ok(t, b.Take(t0, Cost{Requests: 1, OutputTokens: 5000}), "first")
	// Output has 1000 left; 1600 waits 600 tokens = 6s.
	refused(t, b.Take(t0, Cost{Requests: 1, OutputTokens: 1600}), OutputTokens, 6*time.Second, "second")
	if s := b.Status(t0); s[Requests].Remaining != 59 || s[OutputTokens].Remaining != 1000 {
		t.Fatalf("refused take left a trace: %+v", s)
	}
	// The longest wait names the dimension: requests wait 1s, output 6s.
	b2 := mustNew(t, Limits{Requests: {PerMinute: 60, Burst: 1}, OutputTokens: {PerMinute: 6000}})
	ok(t, b2.Take(t0, Cost{Requests: 1, OutputTokens: 5000}), "first")
	refused(t, b2.Take(t0, Cost{Requests: 1, OutputTokens: 1600}), OutputTokens, 6*time.Second, "longest")
	refused(t, b2.Take(t0, Cost{Requests: 1, OutputTokens: 100}), Requests, time.Second, "requests only")
	// Ties go to the first dimension.
	b3 := mustNew(t, Limits{Requests: {PerMinute: 60, Burst: 1}, InputTokens: {PerMinute: 60, Burst: 1}})
	ok(t, b3.Take(t0, Cost{Requests: 1, InputTokens: 1}), "first")
	refused(t, b3.Take(t0, Cost{Requests: 1, InputTokens: 1}), Requests, time.Second, "tie")
}

// TestRefundRestores: a reservation returned whole leaves the budget as
// it would have been without the request, whether returned at once or
// later, with other requests in between while the budget stayed busy.
func TestRefundRestores(t *testing.T) {
	l := Limits{Requests: {PerMinute: 7}, InputTokens: {PerMinute: 9000, Burst: 4000}, OutputTokens: {PerMinute: 1_000_003}}
	res := Cost{Requests: 1, InputTokens: 1234, OutputTokens: 777_777}
	other := Cost{Requests: 1, InputTokens: 500, OutputTokens: 10_000}
	for _, refundAt := range []time.Duration{0, time.Millisecond, 3 * time.Second} {
		with, without := mustNew(t, l), mustNew(t, l)
		for _, b := range []*Budget{with, without} {
			ok(t, b.Take(t0, other), "setup")
		}
		ok(t, with.Take(t0.Add(time.Millisecond), res), "reserve")
		for _, b := range []*Budget{with, without} {
			b.Take(t0.Add(2*time.Millisecond), other)
		}
		at := t0.Add(2*time.Millisecond + refundAt)
		with.Refund(at, res)
		without.Refund(at, Cost{}) // moves it to at, like with
		if *with != *without {
			t.Fatalf("refund at +%v: %+v, want %+v", refundAt, *with, *without)
		}
		for _, probe := range []Cost{other, res, {OutputTokens: 1_000_003}} {
			if v, w := with.Take(at, probe), without.Take(at, probe); v != w {
				t.Fatalf("refund at +%v: probe %+v: %+v, want %+v", refundAt, probe, v, w)
			}
		}
	}
	// Settling below the reservation is the same as having reserved only
	// what was used, while the budget stays busy.
	a, b := mustNew(t, l), mustNew(t, l)
	ok(t, a.Take(t0, Cost{Requests: 1, OutputTokens: 900_000}), "reserve")
	ok(t, b.Take(t0, Cost{Requests: 1, OutputTokens: 200_000}), "reserve actual")
	a.Settle(t0.Add(time.Second), Cost{Requests: 1, OutputTokens: 900_000}, Cost{Requests: 1, OutputTokens: 200_000})
	b.Settle(t0.Add(time.Second), Cost{Requests: 1, OutputTokens: 200_000}, Cost{Requests: 1, OutputTokens: 200_000})
	if *a != *b {
		t.Fatalf("settle: %+v, want %+v", *a, *b)
	}
}

// TestRefundNeverBeyondIdle: a refund brings a budget back to full, never
// beyond it, whatever it claims to return.
func TestRefundNeverBeyondIdle(t *testing.T) {
	b := mustNew(t, one(OutputTokens, 6000, 0))
	ok(t, b.Take(t0, Cost{OutputTokens: 10}), "take")
	b.Settle(t0, Cost{OutputTokens: 6000}, Cost{}) // returns far more than it holds
	b.Refund(t0, Cost{OutputTokens: math.MaxInt64})
	if s := b.Status(t0)[OutputTokens]; s.Remaining != 6000 || s.Reset != 0 {
		t.Fatalf("after refund: %+v, want full", s)
	}
	ok(t, b.Take(t0, Cost{OutputTokens: 6000}), "the burst")
	refused(t, b.Take(t0, Cost{OutputTokens: 1}), OutputTokens, 10*time.Millisecond, "one more")

	// A reservation long gone returns only to full.
	b = mustNew(t, one(OutputTokens, 6000, 0))
	ok(t, b.Take(t0, Cost{OutputTokens: 6000}), "reserve the burst")
	later := t0.Add(30 * time.Second) // half of it came back by itself
	b.Refund(later, Cost{OutputTokens: 6000})
	if s := b.Status(later)[OutputTokens]; s.Remaining != 6000 || s.Reset != 0 {
		t.Fatalf("after late refund: %+v, want full", s)
	}
	ok(t, b.Take(later, Cost{OutputTokens: 6000}), "the burst again")
	refused(t, b.Take(later, Cost{OutputTokens: 1}), OutputTokens, 10*time.Millisecond, "one more")
}

// TestDebt: an overrun is charged beyond the burst, and later requests
// wait exactly until the debt and their own cost fit.
func TestDebt(t *testing.T) {
	b := mustNew(t, one(OutputTokens, 60, 0)) // T = 1s
	ok(t, b.Take(t0, Cost{OutputTokens: 60}), "reserve the burst")
	at := t0.Add(10 * time.Second)
	b.Settle(at, Cost{OutputTokens: 60}, Cost{OutputTokens: 90}) // backlog 50s + 30s
	if s := b.Status(at)[OutputTokens]; s != (Status{Limit: 60, Burst: 60, Remaining: 0, Reset: 80 * time.Second}) {
		t.Fatalf("in debt: %+v", s)
	}
	// 10 tokens fit when the backlog is 50s: in 30s.
	refused(t, b.Take(at, Cost{OutputTokens: 10}), OutputTokens, 30*time.Second, "in debt")
	// Even a zero cost waits for the debt: 20s.
	refused(t, b.Take(at, Cost{Requests: 1}), OutputTokens, 20*time.Second, "zero cost in debt")
	refused(t, b.Take(at.Add(30*time.Second-1), Cost{OutputTokens: 10}), OutputTokens, 1, "1ns early")
	ok(t, b.Take(at.Add(30*time.Second), Cost{OutputTokens: 10}), "on time")

	// An absurd overrun saturates rather than wrapping around.
	b = mustNew(t, one(OutputTokens, 1, 0))
	for range 3 {
		b.Settle(t0, Cost{}, Cost{OutputTokens: math.MaxInt64})
	}
	if s := b.Status(t0)[OutputTokens]; s.Remaining != 0 || s.Reset != time.Duration(maxSpan) {
		t.Fatalf("saturated: %+v", s)
	}
	if v := b.Take(t0, Cost{OutputTokens: 1}); v.OK || v.RetryAfter != time.Duration(maxSpan)-time.Minute {
		t.Fatalf("saturated take: %+v", v)
	}
}

func TestStatus(t *testing.T) {
	b := mustNew(t, Limits{
		Requests:     {PerMinute: 7, Burst: 3},
		InputTokens:  {PerMinute: 60},
		OutputTokens: {PerMinute: 10_000_000},
	})
	full := [3]Status{
		{Limit: 7, Burst: 3, Remaining: 3},
		{Limit: 60, Burst: 60, Remaining: 60},
		{Limit: 10_000_000, Burst: 10_000_000, Remaining: 10_000_000},
	}
	if s := b.Status(t0); s != full {
		t.Fatalf("idle: %+v", s)
	}
	ok(t, b.Take(t0, Cost{Requests: 1, InputTokens: 15, OutputTokens: 1}), "take")
	want := [3]Status{
		{Limit: 7, Burst: 3, Remaining: 2, Reset: 8_571_428_572},                                  // 60/7 s, rounded up
		{Limit: 60, Burst: 60, Remaining: 45, Reset: 15 * time.Second},                            // 15 × 1s
		{Limit: 10_000_000, Burst: 10_000_000, Remaining: 9_999_999, Reset: 6 * time.Microsecond}, // T = 6µs
	}
	if s := b.Status(t0); s != want {
		t.Fatalf("after take:\n%+v\nwant\n%+v", s, want)
	}
	// 2.5s later: input backlog 12.5s holds 12.5 tokens: 47 remain (47
	// fit, 48 do not); output is full again.
	at := t0.Add(2500 * time.Millisecond)
	want = [3]Status{
		{Limit: 7, Burst: 3, Remaining: 2, Reset: 6_071_428_572},
		{Limit: 60, Burst: 60, Remaining: 47, Reset: 12500 * time.Millisecond},
		full[2],
	}
	if s := b.Status(at); s != want {
		t.Fatalf("2.5s later:\n%+v\nwant\n%+v", s, want)
	}
	if v := b.Take(at, Cost{InputTokens: 48}); v.OK || v.RetryAfter != 500*time.Millisecond {
		t.Fatalf("48 tokens: %+v", v)
	}
	ok(t, b.Take(at, Cost{InputTokens: 47}), "47 tokens")
	// Status changes nothing and reads the future without moving time.
	before := *b
	b.Status(at.Add(time.Hour))
	if *b != before {
		t.Fatal("Status changed the budget")
	}
	if s := b.Status(at.Add(time.Hour)); s != full {
		t.Fatalf("an hour later: %+v", s)
	}
}

// TestClockBackwards: a now earlier than one seen is taken as the latest.
func TestClockBackwards(t *testing.T) {
	b := mustNew(t, one(Requests, 60, 1))
	ok(t, b.Take(t0.Add(time.Minute), Cost{Requests: 1}), "take")
	refused(t, b.Take(t0, Cost{Requests: 1}), Requests, time.Second, "earlier now")
	b.Refund(t0, Cost{Requests: 5}) // to full at the latest now, not earlier
	ok(t, b.Take(t0, Cost{Requests: 1}), "after refund")
	refused(t, b.Take(t0.Add(time.Minute), Cost{Requests: 1}), Requests, time.Second, "no extra credit")
	if s := b.Status(t0)[Requests]; s.Reset != time.Second {
		t.Fatalf("status at an earlier now: %+v", s)
	}
}

// TestExtremeLimits: from 1 a minute to the largest int64.
func TestExtremeLimits(t *testing.T) {
	b := mustNew(t, one(InputTokens, 1, 0))
	ok(t, b.Take(t0, Cost{InputTokens: 1}), "1/min")
	refused(t, b.Take(t0, Cost{InputTokens: 1}), InputTokens, time.Minute, "1/min again")

	b = mustNew(t, one(InputTokens, 1, 100*365*24*60))
	ok(t, b.Take(t0, Cost{InputTokens: 100 * 365 * 24 * 60}), "a century's burst")
	refused(t, b.Take(t0, Cost{InputTokens: 1}), InputTokens, time.Minute, "a century's burst, one more")

	b = mustNew(t, one(InputTokens, 10_000_000, 0))
	ok(t, b.Take(t0, Cost{InputTokens: 10_000_000}), "10M")
	refused(t, b.Take(t0, Cost{InputTokens: 1}), InputTokens, 6*time.Microsecond, "10M, one more")
	refused(t, b.Take(t0, Cost{InputTokens: 1_000_000}), InputTokens, 6*time.Second, "10M, a million more")

	const big = math.MaxInt64
	b = mustNew(t, one(InputTokens, big, 0))
	ok(t, b.Take(t0, Cost{InputTokens: big}), "max")
	refused(t, b.Take(t0, Cost{InputTokens: 1}), InputTokens, 1, "max, one more") // T ≪ 1ns, rounded up
	refused(t, b.Take(t0, Cost{InputTokens: big / 2}), InputTokens, 30*time.Second, "max, half more")
	if s := b.Status(t0)[InputTokens]; s.Remaining != 0 || s.Reset != time.Minute {
		t.Fatalf("max: %+v", s)
	}
	at := t0.Add(30 * time.Second)
	if s := b.Status(at)[InputTokens]; s.Remaining != big/2 || s.Reset != 30*time.Second {
		t.Fatalf("max, 30s later: %+v", s)
	}
}

// TestNegativeCosts count as zero.
func TestNegativeCosts(t *testing.T) {
	b := mustNew(t, Limits{Requests: {PerMinute: 60}, InputTokens: {PerMinute: 60}, OutputTokens: {PerMinute: 60}})
	ok(t, b.Take(t0, Cost{Requests: -5, InputTokens: -1, OutputTokens: math.MinInt64}), "negative")
	b.Settle(t0, Cost{Requests: -1}, Cost{OutputTokens: -100})
	b.Refund(t0, Cost{InputTokens: math.MinInt64})
	if s := b.Status(t0); s[0].Remaining != 60 || s[1].Remaining != 60 || s[2].Remaining != 60 {
		t.Fatalf("%+v", s)
	}
}

func TestCheckAndCharge(t *testing.T) {
	b := mustNew(t, one(InputTokens, 600, 100))
	now := time.Unix(0, 0)
	if v := b.Check(now, costIn(InputTokens, 100)); !v.OK {
		t.Fatalf("a full burst should fit an idle budget: %+v", v)
	}
	if v := b.Check(now, costIn(InputTokens, 100)); !v.OK {
		t.Fatal("Check took something: a second check of a full burst was refused")
	}
	b.Charge(now, costIn(InputTokens, 150)) // 50 into debt
	if s := b.Status(now)[InputTokens]; s.Remaining != 0 {
		t.Fatalf("after a charge past the burst, remaining is %d, want 0", s.Remaining)
	}
	// 50 tokens of debt at 10 a second take 5 s to pay, then a token 0.1 s.
	refused(t, b.Check(now, costIn(InputTokens, 1)), InputTokens, 5100*time.Millisecond, "a token in debt")
	ok(t, b.Take(now.Add(5100*time.Millisecond), costIn(InputTokens, 1)), "a token once the debt is paid")
}
