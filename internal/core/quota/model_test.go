package quota

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// The reference model: each dimension is a bucket of Burst units holding
// a level, an exact rational, that drains at PerMinute units a minute and
// never below zero. A cost passes iff level + cost ≤ Burst. It knows
// nothing of TAT, spans or remainders, and finds every wait by its
// defining inequality, checked at the answer and a nanosecond before.

var nsPerMinute = big.NewRat(int64(time.Minute), 1)

type fluidDim struct {
	per, burst int64 // per 0: unlimited
	level      *big.Rat
}

type fluid struct {
	dims    [numDimensions]fluidDim
	at      int64 // ns since t0: the latest now seen
	started bool  // at is set
}

func newFluid(l Limits) *fluid {
	f := &fluid{}
	for d, x := range l {
		b := x.Burst
		if b == 0 {
			b = x.PerMinute
		}
		f.dims[d] = fluidDim{per: x.PerMinute, burst: b, level: new(big.Rat)}
	}
	return f
}

// levelAfter is the level δ ns after the model's time.
func (g *fluidDim) levelAfter(δ int64) *big.Rat {
	drained := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(δ), big.NewInt(g.per)), big.NewInt(int64(time.Minute)))
	l := new(big.Rat).Sub(g.level, drained)
	if l.Sign() < 0 {
		l.SetInt64(0)
	}
	return l
}

// fits reports whether n fits δ ns after the model's time.
func (g *fluidDim) fits(δ, n int64) bool {
	l := g.levelAfter(δ)
	l.Add(l, new(big.Rat).SetInt64(n))
	return l.Cmp(new(big.Rat).SetInt64(g.burst)) <= 0
}

// ceilRat is ⌈x⌉ for x ≥ 0.
func ceilRat(x *big.Rat) int64 {
	q, r := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		panic("ceilRat: overflow")
	}
	return q.Int64()
}

// wait is the least whole δ ≥ 0 at which n fits: from the inequality
// level − δ·per/1min + n ≤ burst, then checked by brute force at δ and
// δ−1, so a wrong formula here fails the model, not the Budget.
func (g *fluidDim) wait(t *testing.T, n int64) int64 {
	x := new(big.Rat).Add(g.level, new(big.Rat).SetInt64(n))
	x.Sub(x, new(big.Rat).SetInt64(g.burst))
	if x.Sign() <= 0 {
		return 0
	}
	x.Mul(x, nsPerMinute)
	x.Quo(x, new(big.Rat).SetInt64(g.per))
	δ := ceilRat(x)
	if !g.fits(δ, n) || g.fits(δ-1, n) {
		t.Fatalf("model: %d is not the least wait for %d (level %v, per %d, burst %d)", δ, n, g.level, g.per, g.burst)
	}
	return δ
}

// advance moves the model to at (ns since t0), or keeps it if at is
// earlier, and returns the time it is at.
func (f *fluid) advance(at int64) int64 {
	if !f.started {
		f.at, f.started = at, true
	}
	if at > f.at {
		for d := range f.dims {
			if f.dims[d].per > 0 {
				f.dims[d].level = f.dims[d].levelAfter(at - f.at)
			}
		}
		f.at = at
	}
	return f.at
}

func amount(c Cost, d Dimension) int64 {
	return max(0, [3]int64{c.Requests, c.InputTokens, c.OutputTokens}[d])
}

func (f *fluid) take(t *testing.T, at int64, c Cost) Verdict {
	f.advance(at)
	v := Verdict{OK: true}
	for d := range f.dims {
		g := &f.dims[d]
		n := amount(c, Dimension(d))
		switch {
		case g.per == 0:
		case n > g.burst:
			if !v.Never {
				v = Verdict{Dimension: Dimension(d), Never: true}
			}
		case v.Never:
		default:
			if w := time.Duration(g.wait(t, n)); w > 0 && (v.OK || w > v.RetryAfter) {
				v = Verdict{Dimension: Dimension(d), RetryAfter: w}
			}
		}
	}
	if v.OK {
		for d := range f.dims {
			if g := &f.dims[d]; g.per > 0 {
				g.level.Add(g.level, new(big.Rat).SetInt64(amount(c, Dimension(d))))
			}
		}
	}
	return v
}

func (f *fluid) settle(at int64, reserved, actual Cost) {
	f.advance(at)
	for d := range f.dims {
		g := &f.dims[d]
		if g.per == 0 {
			continue
		}
		δ := new(big.Rat).SetInt64(amount(actual, Dimension(d)))
		δ.Sub(δ, new(big.Rat).SetInt64(amount(reserved, Dimension(d))))
		g.level.Add(g.level, δ)
		if g.level.Sign() < 0 {
			g.level.SetInt64(0)
		}
	}
}

func (f *fluid) status(t *testing.T, at int64) [numDimensions]Status {
	var s [numDimensions]Status
	δ := max(0, at-f.at) // every level is zero until started
	for d := range f.dims {
		g := &f.dims[d]
		if g.per == 0 {
			continue
		}
		l := g.levelAfter(δ)
		room := new(big.Rat).Sub(new(big.Rat).SetInt64(g.burst), l)
		remaining := int64(0)
		if room.Sign() > 0 {
			q := new(big.Int).Quo(room.Num(), room.Denom()) // floor, room > 0
			remaining = q.Int64()
		}
		reset := ceilRat(new(big.Rat).Quo(new(big.Rat).Mul(l, nsPerMinute), new(big.Rat).SetInt64(g.per)))
		if g.levelAfter(δ+reset).Sign() != 0 || reset > 0 && g.levelAfter(δ+reset-1).Sign() == 0 {
			t.Fatalf("model: reset %d is not when the level reaches zero", reset)
		}
		s[d] = Status{Limit: g.per, Burst: g.burst, Remaining: remaining, Reset: time.Duration(reset)}
	}
	return s
}

// limitChoices mixes tiny, odd, round and huge rates.
var limitChoices = []int64{0, 1, 2, 3, 7, 60, 97, 600, 1000, 6001, 100_003, 10_000_000, 123_456_789, 9_000_000_000_000, math.MaxInt64 / 3}

func randomLimits(r *rand.Rand) Limits {
	var l Limits
	for d := range l {
		per := limitChoices[r.IntN(len(limitChoices))]
		if per == 0 {
			continue
		}
		var burst int64
		switch r.IntN(7) {
		case 0, 1:
		case 2:
			burst = 1
		case 3:
			burst = per/3 + 1
		case 4:
			burst = min(2*per+1, math.MaxInt64/2)
		case 5:
			burst = 1 + r.Int64N(min(per, math.MaxInt64/8)*4)
		case 6:
			burst = 1 + r.Int64N(min(per, 50))
		}
		l[d] = Limit{PerMinute: per, Burst: burst}
	}
	return l
}

// randomCost draws a cost that mostly fits, sometimes exactly the
// burst, sometimes just above it or far above.
func randomCost(r *rand.Rand, l Limits) Cost {
	var n [numDimensions]int64
	for d, x := range l {
		b := x.Burst
		if b == 0 {
			b = x.PerMinute
		}
		if b == 0 {
			b = 1 << 20 // unlimited: anything
		}
		switch k := r.IntN(30); {
		case k == 0:
			n[d] = 0
		case k == 1:
			n[d] = 1
		case k == 2:
			n[d] = b
		case k == 3:
			n[d] = b + 1
		case k == 4:
			n[d] = r.Int64N(min(2*b, math.MaxInt64/2)) + 1
		case k == 5:
			n[d] = -r.Int64N(5) // counts as zero
		default:
			n[d] = r.Int64N(b/4 + 1)
		}
	}
	return Cost{Requests: n[0], InputTokens: n[1], OutputTokens: n[2]}
}

// randomStep draws a time step across scales: none, nanoseconds to
// minutes, now and then hours, and now and then backwards.
func randomStep(r *rand.Rand) time.Duration {
	switch k := r.IntN(100); {
	case k < 20:
		return 0
	case k < 23:
		return -time.Duration(r.Int64N(int64(time.Second)))
	case k < 25:
		return time.Duration(r.Int64N(int64(3 * time.Hour)))
	default:
		scale := []time.Duration{10, time.Microsecond, time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, time.Minute}
		return time.Duration(r.Int64N(int64(scale[r.IntN(len(scale))]))) + 1
	}
}

// ledger records, per dimension, what the guarantee counts: takes that
// passed (positive), overruns charged (positive), refunds (negative, the
// amount asked, before the floor at full).
type event struct {
	at   int64 // ns since t0, as the budget saw it
	n    int64
	take bool
}

type ledger [numDimensions][]event

func (lg *ledger) settle(at int64, reserved, actual Cost) {
	for d := range lg {
		if δ := amount(actual, Dimension(d)) - amount(reserved, Dimension(d)); δ != 0 {
			lg[d] = append(lg[d], event{at: at, n: δ})
		}
	}
}

// checkGuarantee verifies, per limited dimension, that over every
// stretch [events[i], events[j]] ending with a take, the net amount is
// at most B + L·d/1min, i.e. sum·1min ≤ B·1min + d·L. With prefix sums
// P, the worst start for each end j is the one maximising
// t_i·L − P_{i−1}·1min, kept as a running maximum. It returns how many
// ends it checked and how many met the bound with equality.
func checkGuarantee(l Limits, lg *ledger) (ends, tight int, err error) {
	min := big.NewInt(int64(time.Minute))
	for d, x := range l {
		if x.PerMinute == 0 {
			continue
		}
		b := x.Burst
		if b == 0 {
			b = x.PerMinute
		}
		bound := new(big.Int).Mul(big.NewInt(b), min)
		per := big.NewInt(x.PerMinute)
		prefix := new(big.Int) // P_{k−1}
		var best *big.Int      // max over i ≤ k of t_i·L − P_{i−1}·1min
		for _, e := range lg[d] {
			v := new(big.Int).Mul(big.NewInt(e.at), per)
			v.Sub(v, new(big.Int).Mul(prefix, min))
			if best == nil || v.Cmp(best) > 0 {
				best = v
			}
			prefix.Add(prefix, big.NewInt(e.n))
			if !e.take {
				continue
			}
			// P_j·1min − t_j·L + best ≤ B·1min
			w := new(big.Int).Mul(prefix, min)
			w.Sub(w, new(big.Int).Mul(big.NewInt(e.at), per))
			w.Add(w, best)
			ends++
			switch w.Cmp(bound) {
			case 1:
				return ends, tight, fmt.Errorf("%s: guarantee broken at +%v: net·1min − d·L = %v > B·1min = %v", Dimension(d), time.Duration(e.at), w, bound)
			case 0:
				tight++
			}
		}
	}
	return ends, tight, nil
}

type tally struct {
	takes, passed, refused, never, boundary, settles, refunds, statuses, ends, tight int
}

// run drives a Budget and the model with the same random calls and
// compares every answer. If clean, every passed take is later settled
// with actual ≤ reserved, or refunded, and no other settle is made.
func run(t *testing.T, seed uint64, steps int, clean bool, tl *tally) (*Budget, *fluid, int64, Limits) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x9c7a))
	l := randomLimits(r)
	b := mustNew(t, l)
	m := newFluid(l)
	var lg ledger
	var held []Cost
	var at int64 // ns since t0, as the host sees it; may run backwards
	var last Cost
	var lastWait time.Duration
	for i := range steps {
		op := r.IntN(100)
		boundary := false
		switch {
		case lastWait > 0 && op < 15:
			// Retry the refused cost exactly at its RetryAfter, or a
			// nanosecond before.
			at = m.at + int64(lastWait)
			if r.IntN(3) == 0 {
				at--
			}
			boundary = true
			op = 0
		default:
			at += int64(randomStep(r))
		}
		now := t0.Add(time.Duration(at))
		switch {
		case op < 45:
			c := randomCost(r, l)
			if boundary {
				c = last
			}
			got, want := b.Take(now, c), m.take(t, at, c)
			if got != want {
				t.Fatalf("seed %d step %d: Take(+%v, %+v) = %+v, model %+v (limits %+v)", seed, i, time.Duration(at), c, got, want, l)
			}
			tl.takes++
			if boundary {
				tl.boundary++
			}
			lastWait = 0
			switch {
			case got.OK:
				tl.passed++
				held = append(held, c)
				for d := range lg {
					lg[d] = append(lg[d], event{at: m.at, n: amount(c, Dimension(d)), take: true})
				}
			case got.Never:
				tl.never++
			default:
				tl.refused++
				last, lastWait = c, got.RetryAfter
			}
		case op < 75 && len(held) > 0:
			j := r.IntN(len(held))
			res := held[j]
			held = append(held[:j], held[j+1:]...)
			used := res
			pick := func(n int64) int64 {
				switch k := r.IntN(10); {
				case k < 3 || n <= 0 || n == math.MaxInt64:
					return max(n, 0)
				case k < 8 || clean || n > math.MaxInt64/4:
					return r.Int64N(n + 1)
				default: // an overrun, into debt
					return n + 1 + r.Int64N(n*3)
				}
			}
			used = Cost{Requests: pick(res.Requests), InputTokens: pick(res.InputTokens), OutputTokens: pick(res.OutputTokens)}
			b.Settle(now, res, used)
			m.settle(at, res, used)
			lg.settle(m.at, res, used)
			tl.settles++
		case op < 85 && len(held) > 0:
			j := r.IntN(len(held))
			res := held[j]
			held = append(held[:j], held[j+1:]...)
			b.Refund(now, res)
			m.settle(at, res, Cost{})
			lg.settle(m.at, res, Cost{})
			tl.refunds++
		case op >= 85 && op < 88 && !clean:
			// A settle that matches no take: the host's business.
			res, used := randomCost(r, l), randomCost(r, l)
			b.Settle(now, res, used)
			m.settle(at, res, used)
			lg.settle(m.at, res, used)
			tl.settles++
		default:
			at2 := at + int64(randomStep(r))
			if got, want := b.Status(t0.Add(time.Duration(at2))), m.status(t, at2); got != want {
				t.Fatalf("seed %d step %d: Status(+%v) = %+v, model %+v (limits %+v)", seed, i, time.Duration(at2), got, want, l)
			}
			tl.statuses++
		}
		if clean {
			for d, s := range b.Status(now) {
				if full := units(uint64(s.Burst), uint64(max(s.Limit, 1))).ceil(); s.Limit > 0 && s.Reset > full {
					t.Fatalf("seed %d step %d: %s in debt (reset %v > %v) with nothing overrun", seed, i, Dimension(d), s.Reset, full)
				}
			}
		}
	}
	if clean {
		for _, res := range held {
			if r.IntN(2) == 0 {
				b.Refund(t0.Add(time.Duration(at)), res)
				m.settle(at, res, Cost{})
				lg.settle(m.at, res, Cost{})
			} else {
				used := Cost{Requests: res.Requests, InputTokens: r.Int64N(max(res.InputTokens, 0) + 1), OutputTokens: r.Int64N(max(res.OutputTokens, 0) + 1)}
				b.Settle(t0.Add(time.Duration(at)), res, used)
				m.settle(at, res, used)
				lg.settle(m.at, res, used)
			}
		}
	}
	e, tight, err := checkGuarantee(l, &lg)
	if err != nil {
		t.Fatalf("seed %d: %v (limits %+v)", seed, err, l)
	}
	tl.ends += e
	tl.tight += tight
	return b, m, at, l
}

// TestAgainstModel: every verdict, RetryAfter and Status matches the
// model exactly, over random limits, costs (above the burst too),
// settles into debt, refunds, and times from nanoseconds to hours,
// backwards now and then; and the guarantee holds over every stretch.
func TestAgainstModel(t *testing.T) {
	seeds, steps := 400, 500
	if testing.Short() {
		seeds = 60
	}
	var tl tally
	for seed := range uint64(seeds) {
		run(t, seed, steps, false, &tl)
	}
	t.Logf("%d seeds × %d steps: %d takes (%d passed, %d refused with a wait, %d never; %d retried at RetryAfter or 1ns before), %d settles, %d refunds, %d statuses; guarantee checked at %d ends, met with equality at %d",
		seeds, steps, tl.takes, tl.passed, tl.refused, tl.never, tl.boundary, tl.settles, tl.refunds, tl.statuses, tl.ends, tl.tight)
	// The boundary retries scale with the run: 1,000 over the full 400
	// seeds, 150 over -short's 60.
	if tl.refused < tl.takes/20 || tl.never == 0 || tl.boundary < seeds*steps/200 || tl.tight == 0 {
		t.Fatalf("the runs did not reach the interesting cases: %+v", tl)
	}
}

// TestNothingLeaks: when every Take that passed is settled with no more
// than it reserved, or refunded, the budget is never in debt, and it is
// full again exactly when Status says: at the latest Reset and not a
// nanosecond earlier. When everything is refunded, it is full at once.
func TestNothingLeaks(t *testing.T) {
	seeds, steps := 250, 400
	if testing.Short() {
		seeds = 40
	}
	var tl tally
	for seed := range uint64(seeds) {
		b, m, at, l := run(t, 1_000_000+seed, steps, true, &tl)
		at = m.at
		now := t0.Add(time.Duration(at))
		var reset time.Duration
		for _, s := range b.Status(now) {
			reset = max(reset, s.Reset)
		}
		full := func(when time.Time) bool {
			for _, s := range b.Status(when) {
				if s.Remaining != s.Burst || s.Reset != 0 {
					return false
				}
			}
			return true
		}
		if !full(now.Add(reset)) || reset > 0 && full(now.Add(reset-1)) {
			t.Fatalf("seed %d: not full exactly %v after the last settle: %+v", seed, reset, b.Status(now.Add(reset)))
		}
		// And full means a whole burst passes in every dimension.
		var c Cost
		for d, x := range l {
			n := x.Burst
			if n == 0 {
				n = x.PerMinute
			}
			switch Dimension(d) {
			case Requests:
				c.Requests = n
			case InputTokens:
				c.InputTokens = n
			case OutputTokens:
				c.OutputTokens = n
			}
		}
		if v := b.Take(now.Add(reset), c); !v.OK {
			t.Fatalf("seed %d: a full burst refused when full: %+v", seed, v)
		}
	}
	t.Logf("%d seeds × %d steps: %d takes (%d passed), %d settles, %d refunds, %d statuses", seeds, steps, tl.takes, tl.passed, tl.settles, tl.refunds, tl.statuses)

	// Everything refunded: full at once, with no wait.
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 0x1eaf))
		l := randomLimits(r)
		b := mustNew(t, l)
		var held []Cost
		now := t0
		for range 300 {
			now = now.Add(max(0, randomStep(r)))
			if r.IntN(3) > 0 {
				if c := randomCost(r, l); b.Take(now, c).OK {
					held = append(held, c)
				}
			} else if len(held) > 0 {
				j := r.IntN(len(held))
				b.Refund(now, held[j])
				held = append(held[:j], held[j+1:]...)
			}
		}
		for _, c := range held {
			b.Refund(now, c)
		}
		for d, s := range b.Status(now) {
			if s.Remaining != s.Burst || s.Reset != 0 {
				t.Fatalf("seed %d: %s not full after every take was refunded: %+v", seed, Dimension(d), s)
			}
		}
	}
}

// TestGuaranteeCheckerCatches: the checker is not vacuous. B at once is
// tight; one more at once, or B+2 within a stretch that refills only
// one, breaks the guarantee.
func TestGuaranteeCheckerCatches(t *testing.T) {
	l := one(Requests, 60, 10) // T = 1s
	var lg ledger
	for range 10 {
		lg[Requests] = append(lg[Requests], event{at: 0, n: 1, take: true})
	}
	if e, tight, err := checkGuarantee(l, &lg); e != 10 || tight != 1 || err != nil {
		t.Fatalf("ends %d tight %d err %v", e, tight, err)
	}
	lg[Requests] = append(lg[Requests], event{at: int64(time.Second), n: 1, take: true})
	if _, tight, err := checkGuarantee(l, &lg); tight != 2 || err != nil {
		t.Fatalf("B+1 over 1s: tight %d err %v", tight, err)
	}
	lg[Requests] = append(lg[Requests], event{at: int64(2*time.Second) - 1, n: 1, take: true})
	if _, _, err := checkGuarantee(l, &lg); err == nil {
		t.Fatal("B+2 within 2s−1ns was not caught")
	}
	// A refund inside the stretch makes room for one more.
	lg[Requests] = append(lg[Requests][:11], event{at: int64(time.Second), n: -1}, event{at: int64(2*time.Second) - 1, n: 1, take: true})
	if _, _, err := checkGuarantee(l, &lg); err != nil {
		t.Fatal(err)
	}
}
