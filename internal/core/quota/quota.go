package quota

import (
	"fmt"
	"time"
)

// Dimension is one of the three things a budget meters.
type Dimension uint8

const (
	Requests     Dimension = iota // requests per minute
	InputTokens                   // input (prompt) tokens per minute
	OutputTokens                  // output (completion) tokens per minute

	numDimensions = 3
)

// String is the dimension's name as it appears in metrics and errors.
func (d Dimension) String() string {
	switch d {
	case Requests:
		return "requests"
	case InputTokens:
		return "input_tokens"
	case OutputTokens:
		return "output_tokens"
	}
	return "unknown"
}

// Limit is one dimension's budget.
type Limit struct {
	// PerMinute is the sustained rate. Zero means unlimited.
	PerMinute int64
	// Burst is the most that can be taken at once from idle, and so the
	// largest single cost that can ever pass. Zero means PerMinute: a
	// full minute's allowance (EffectiveBurst).
	Burst int64
}

// Limits holds a budget's limit in each dimension, indexed by Dimension.
type Limits [numDimensions]Limit

// Validate reports the first invalid limit: a negative number, a Burst
// without a PerMinute, or a burst that would take more than a century to
// come back (Burst/PerMinute minutes).
func (l Limits) Validate() error {
	for d, x := range l {
		switch {
		case x.PerMinute < 0:
			return fmt.Errorf("quota: %s: per-minute limit %d is negative", Dimension(d), x.PerMinute)
		case x.Burst < 0:
			return fmt.Errorf("quota: %s: burst %d is negative", Dimension(d), x.Burst)
		case x.PerMinute == 0 && x.Burst > 0:
			return fmt.Errorf("quota: %s: burst %d without a per-minute limit", Dimension(d), x.Burst)
		case x.PerMinute > 0 && x.Burst > 0 && units(uint64(x.Burst), uint64(x.PerMinute)).ceil() > maxRefill:
			return fmt.Errorf("quota: %s: burst %d at %d a minute would take over a century to refill", Dimension(d), x.Burst, x.PerMinute)
		}
	}
	return nil
}

// Cost is what one request takes from a budget. Negative numbers count
// as zero.
type Cost struct {
	Requests     int64
	InputTokens  int64
	OutputTokens int64
}

func (c Cost) amounts() [numDimensions]uint64 {
	return [numDimensions]uint64{uint64(max(c.Requests, 0)), uint64(max(c.InputTokens, 0)), uint64(max(c.OutputTokens, 0))}
}

// Verdict is Take's answer.
type Verdict struct {
	// OK: the cost was taken in every dimension. Otherwise nothing was.
	OK bool
	// Dimension is the one that refused. When several refuse, it is one
	// that can never pass if there is one, else the one with the longest
	// wait (the first of them in Requests, InputTokens, OutputTokens
	// order).
	Dimension Dimension
	// RetryAfter is exactly when the same cost would first pass, if
	// nothing else is taken or returned meanwhile: it passes at
	// now+RetryAfter and not a nanosecond before (RetryAfter is rounded
	// up to a whole nanosecond, so it is never early). Zero when OK or
	// Never.
	RetryAfter time.Duration
	// Never: the cost is above Dimension's burst, so no wait will let it
	// through. The host should answer with an error naming the limit,
	// not with a Retry-After.
	Never bool
}

// Status is one dimension's state, for the rate-limit headers clients
// parse. The host maps it, per dimension, onto:
//
//   - OpenAI: x-ratelimit-limit-requests = Limit,
//     x-ratelimit-remaining-requests = Remaining,
//     x-ratelimit-reset-requests = Reset as a duration ("1m0s", "6ms").
//     OpenAI has a single token family (x-ratelimit-*-tokens); the host
//     reports whichever token dimension has the smaller Remaining.
//   - Anthropic: anthropic-ratelimit-requests-limit = Limit,
//     -remaining = Remaining, -reset = now+Reset as RFC 3339; likewise
//     anthropic-ratelimit-input-tokens-* and -output-tokens-*.
//
// A dimension with Limit 0 is unlimited and gets no headers.
type Status struct {
	// Limit is the dimension's PerMinute.
	Limit int64
	// Burst is the most that can be taken at once from idle.
	Burst int64
	// Remaining is the largest cost Take would let through now in this
	// dimension, floored at 0 (so a budget in debt reads 0).
	Remaining int64
	// Reset is how long until the budget is full again (Remaining =
	// Burst) if nothing more is taken, rounded up to a nanosecond; zero
	// when it is full. In debt, it includes the time to pay the debt.
	Reset time.Duration
}

// gcra is one dimension's state.
type gcra struct {
	per, burst uint64 // per 0: unlimited
	// full is burst·T, the backlog of a burst taken from idle, and the
	// most any take may leave behind.
	full span
	// backlog is TAT − last: how far the theoretical arrival time is
	// ahead of the latest now seen; zero when idle.
	backlog span
}

// Budget is per-minute budgets in three dimensions, each a GCRA. See the
// package comment. It is not safe for concurrent use, and never reads the
// clock. The zero Budget has no limits.
type Budget struct {
	dims [numDimensions]gcra
	last time.Time // latest now seen: time never runs backwards here
}

// New returns a Budget, idle (full) in every dimension, or the error
// Validate reports.
func New(l Limits) (*Budget, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	b := &Budget{}
	for d, x := range l {
		if x.PerMinute == 0 {
			continue
		}
		burst := x.EffectiveBurst()
		per := uint64(x.PerMinute)
		b.dims[d] = gcra{per: per, burst: uint64(burst), full: units(uint64(burst), per)}
	}
	return b, nil
}

// advance moves the budget to now, draining every backlog by the time
// since the latest now seen. A now earlier than that is taken as it.
func (b *Budget) advance(now time.Time) {
	if !now.After(b.last) {
		return
	}
	d := now.Sub(b.last) // saturates; a fresh Budget drains nothing anyway
	for i := range b.dims {
		b.dims[i].backlog = drain(b.dims[i].backlog, d)
	}
	b.last = now
}

// Take takes cost at now, in every dimension or in none. A dimension
// whose limit is zero takes anything; a zero cost in a limited dimension
// passes unless that dimension is in debt.
func (b *Budget) Take(now time.Time, cost Cost) Verdict {
	return b.take(now, cost, true)
}

// Check is Take's verdict without taking anything: whether cost would
// pass at now, and if not, why and when.
func (b *Budget) Check(now time.Time, cost Cost) Verdict {
	return b.take(now, cost, false)
}

// Charge takes cost unconditionally, into debt if need be: for use that
// has already happened (a call sent before its budget was consulted, or
// one a budget cannot refuse).
func (b *Budget) Charge(now time.Time, cost Cost) {
	b.Settle(now, Cost{}, cost)
}

func (b *Budget) take(now time.Time, cost Cost, commit bool) Verdict {
	b.advance(now)
	n := cost.amounts()
	var after [numDimensions]span
	v := Verdict{OK: true}
	for d := range b.dims {
		g := &b.dims[d]
		if g.per == 0 {
			continue
		}
		if n[d] > g.burst {
			if !v.Never {
				v = Verdict{Dimension: Dimension(d), Never: true}
			}
			continue
		}
		// Allowed iff max(TAT, now) + n·T − now ≤ B·T.
		after[d] = add(g.backlog, units(n[d], g.per), g.per)
		if v.Never || !g.full.less(after[d]) {
			continue
		}
		if w := sub(after[d], g.full, g.per).ceil(); v.OK || w > v.RetryAfter {
			v = Verdict{Dimension: Dimension(d), RetryAfter: w}
		}
	}
	if v.OK && commit {
		for d := range b.dims {
			if b.dims[d].per != 0 {
				b.dims[d].backlog = after[d]
			}
		}
	}
	return v
}

// Settle reconciles a request that ran: reserved is what its Take took,
// actual what it used. In each dimension, what was reserved and not used
// is refunded, and what was used beyond the reservation is charged, even
// into debt. A refund moves TAT back by its cost, but never earlier than
// now: the budget can come back to full, never beyond it.
func (b *Budget) Settle(now time.Time, reserved, actual Cost) {
	b.advance(now)
	r, a := reserved.amounts(), actual.amounts()
	for d := range b.dims {
		g := &b.dims[d]
		switch {
		case g.per == 0:
		case a[d] > r[d]:
			g.backlog = add(g.backlog, units(a[d]-r[d], g.per), g.per)
		case a[d] < r[d]:
			g.backlog = sub(g.backlog, units(r[d]-a[d], g.per), g.per)
		}
	}
}

// Refund returns everything a Take took for a request that never ran
// (refused after Take by a later check, or its client left while it
// waited): Settle with nothing used.
func (b *Budget) Refund(now time.Time, cost Cost) {
	b.Settle(now, cost, Cost{})
}

// Status reports each dimension's state at now, indexed by Dimension. It
// changes nothing.
func (b *Budget) Status(now time.Time) [numDimensions]Status {
	var elapsed time.Duration
	if now.After(b.last) {
		elapsed = now.Sub(b.last)
	}
	var s [numDimensions]Status
	for d := range b.dims {
		g := &b.dims[d]
		if g.per == 0 {
			continue
		}
		backlog := drain(g.backlog, elapsed)
		s[d] = Status{Limit: int64(g.per), Burst: int64(g.burst), Reset: backlog.ceil()}
		// The largest n with backlog + n·T ≤ B·T is B − ⌈backlog/T⌉.
		if used := perUnits(backlog, g.per); used < g.burst {
			s[d].Remaining = int64(g.burst - used)
		}
	}
	return s
}
