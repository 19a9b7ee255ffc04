package fleet

import (
	"math"
	"math/bits"
	"time"

	"github.com/sluice-gw/sluice/internal/core/quota"
)

// A replica answers most takes from a key's budget without asking the
// store: it holds credit, units the store's budget let it take ahead of
// time (a refill), and hands them out until they run short. Credit is
// the rule; the host carries the refills and the flushes to its store
// (fleetstore over Redis, the simulator in memory) and feeds the
// answers back.
const (
	// CreditLead is how much of a replica's recent rate a refill aims
	// to hold: enough that the next chunk arrives long before the
	// credit runs out.
	CreditLead = 100 * time.Millisecond
	// CreditTau is the time constant of the rate estimate.
	CreditTau = 200 * time.Millisecond
	// CreditShare: a replica holds at most 1/CreditShare of a
	// dimension's burst (2%).
	CreditShare = 50
	// CreditIdle is how long a budget's credit is held without a take
	// before it goes back to the store; the host sweeps (Credit.Sweep)
	// every CreditIdle/3.
	CreditIdle = 150 * time.Millisecond
)

// CreditCap is the most credit one replica holds in a dimension: its
// effective burst over CreditShare. A budget whose cap is below one
// request's cost is never given credit.
func CreditCap(x quota.Limit) int64 { return x.EffectiveBurst() / CreditShare }

// Units is a cost as units per dimension (quota.Dimension order),
// negative amounts as zero.
func Units(c quota.Cost) [3]int64 {
	return [3]int64{max(c.Requests, 0), max(c.InputTokens, 0), max(c.OutputTokens, 0)}
}

// Credit is one key budget's credit on one replica. It is not safe for
// concurrent use. Two clocks enter it: now, the replica's own, for its
// rate, idleness and backoff; at, the store's, for the statuses the
// store gave (the gateway's Redis has its own clock; the simulator has
// one clock for both).
type Credit struct {
	limits quota.Limits
	// credit is what this replica may hand out without asking the store.
	credit [3]int64
	// lent is what was handed out from credit and not refunded: a
	// refund goes back to credit up to it.
	lent [3]int64
	// pending is owed to (positive: overruns) or by (negative: refunds
	// and returned credit) the store's budget, until the next flush.
	pending [3]int64
	// rate is the decayed rate of this replica's takes, units a second;
	// last is the latest take's cost.
	rate   [3]float64
	rateAt time.Time
	last   [3]int64
	used   time.Time // latest take
	// st is the store's budget as it last answered, at stAt.
	st        [3]quota.Status
	stAt      time.Time
	haveSt    bool
	refilling bool
	backoff   time.Time // no refill before it
}

// NewCredit returns an empty credit for a budget with limits l.
func NewCredit(l quota.Limits) *Credit { return &Credit{limits: l} }

// SetLimits changes the budget's limits. The credit is kept: it is
// counted in units, and the store's budget takes units back at its
// current rate.
func (c *Credit) SetLimits(l quota.Limits) { c.limits = l }

// Limits are the budget's limits as last set.
func (c *Credit) Limits() quota.Limits { return c.limits }

// Known reports whether the store has answered for this budget, so the
// credit may answer takes and settlements.
func (c *Credit) Known() bool { return c.haveSt }

// Held reports the credit, what is pending and whether a refill is in
// flight.
func (c *Credit) Held() (credit, pending [3]int64, refilling bool) {
	return c.credit, c.pending, c.refilling
}

// Covers reports whether the credit answers a take of amt: the store
// has answered before, and the credit covers amt in every limited
// dimension. A take it does not cover goes to the store, so every
// refusal is the store's.
func (c *Credit) Covers(amt [3]int64) bool {
	if !c.haveSt {
		return false
	}
	for d, x := range c.limits {
		if x.PerMinute > 0 && c.credit[d] < amt[d] {
			return false
		}
	}
	return true
}

// Lend hands amt out of the credit, which Covers said it covers, and
// counts the take (Note).
func (c *Credit) Lend(now time.Time, amt [3]int64) {
	for d, x := range c.limits {
		if x.PerMinute > 0 {
			c.credit[d] -= amt[d]
			c.lent[d] += amt[d]
		}
	}
	c.Note(now, amt)
}

// Note counts a take of amt at now, from the credit or the store, into
// the rate estimate.
func (c *Credit) Note(now time.Time, amt [3]int64) {
	k := 0.0
	if dt := now.Sub(c.rateAt); dt >= 0 && !c.rateAt.IsZero() {
		k = math.Exp(-dt.Seconds() / CreditTau.Seconds())
	}
	for d := range amt {
		c.rate[d] = c.rate[d]*k + float64(amt[d])/CreditTau.Seconds()
		c.last[d] = amt[d]
	}
	c.rateAt, c.used = now, now
}

// Saw notes the store's budget status st as it answered, at at.
func (c *Credit) Saw(st [3]quota.Status, at time.Time) {
	c.st, c.stAt, c.haveSt = st, at, true
}

// Refill decides, after a take, whether to take more credit from the
// store now, and how much: when the credit fell below the last take's
// cost or half the target, the target being, per dimension, CreditLead
// of the recent rate, at least the last take's cost, at most
// CreditCap. It returns false with no refill in flight already, none
// before the backoff, none for a budget whose cap is below the last
// take's cost, and none that would add nothing. Returning true, it
// marks the refill in flight: the host takes chunk from the store's
// budget, off the request path, and reports the answer to Refilled.
// The host asks only while its store answers.
func (c *Credit) Refill(now time.Time) (chunk [3]int64, ok bool) {
	if c.refilling || now.Before(c.backoff) {
		return chunk, false
	}
	need, some := false, false
	for d, x := range c.limits {
		if x.PerMinute == 0 {
			continue
		}
		cp := CreditCap(x)
		if cp < c.last[d] {
			return [3]int64{}, false // not even one such take fits in a replica's share
		}
		target := min(cp, max(int64(c.rate[d]*CreditLead.Seconds()), c.last[d]))
		if c.credit[d] < c.last[d] || 2*c.credit[d] < target {
			need = true
		}
		chunk[d] = max(min(target, cp-c.credit[d]), 0)
		some = some || chunk[d] > 0
	}
	if !need || !some {
		return [3]int64{}, false
	}
	c.refilling = true
	return chunk, true
}

// Refilled ends the refill in flight with the store's answer, at now
// (status st at at): taken, the chunk joins the credit; refused, no
// refill is tried again before the verdict's RetryAfter, at most
// retry; lost (failed: no answer), none before retry either, and the
// chunk is lost: if the store took it, the fleet admits less, never
// more.
func (c *Credit) Refilled(now time.Time, chunk [3]int64, v quota.Verdict, st [3]quota.Status, at time.Time, failed bool, retry time.Duration) {
	c.refilling = false
	if failed {
		c.backoff = now.Add(retry)
		return
	}
	c.Saw(st, at)
	if !v.OK {
		wait := retry
		if !v.Never {
			wait = min(wait, v.RetryAfter)
		}
		c.backoff = now.Add(wait)
		return
	}
	for d := range chunk {
		c.credit[d] += chunk[d]
	}
}

// Settle settles a reservation res that used act against the credit:
// an overrun is paid from the credit, or else owed; a refund goes back
// to the credit up to what was lent from it (and the cap), or else is
// owed back. What is owed goes to the store at the next Sweep.
func (c *Credit) Settle(res, act [3]int64) {
	for d, x := range c.limits {
		if x.PerMinute == 0 {
			continue
		}
		switch delta := act[d] - res[d]; {
		case delta > 0:
			paid := min(delta, c.credit[d])
			c.credit[d] -= paid
			c.pending[d] += delta - paid
		case delta < 0:
			back := min(-delta, c.lent[d], max(CreditCap(x)-c.credit[d], 0))
			c.credit[d] += back
			c.lent[d] -= back
			c.pending[d] += delta + back
		}
	}
}

// Sweep, every CreditIdle/3 while the store answers, gives back the
// credit of a budget not taken from for idle (all: whatever its
// idleness, at a close) and returns what is owed to (positive) or by
// (negative) the store's budget, for the host to settle there now; what
// the store does not take goes back with Unflushed. drop reports a
// budget idle for 20 idles with nothing held: the host may forget it.
func (c *Credit) Sweep(now time.Time, idle time.Duration, all bool) (flush [3]int64, drop bool) {
	quiet := now.Sub(c.used)
	if all || quiet >= idle {
		for d := range c.credit {
			c.pending[d] -= c.credit[d]
			c.credit[d] = 0
		}
	}
	if c.pending != ([3]int64{}) {
		flush, c.pending = c.pending, [3]int64{}
		return flush, false
	}
	return flush, c.credit == ([3]int64{}) && !c.refilling && quiet >= 20*idle
}

// Unflushed puts back what a flush could not settle in the store, for
// the next Sweep.
func (c *Credit) Unflushed(amt [3]int64) {
	for d := range amt {
		c.pending[d] += amt[d]
	}
}

// Adjust adds the credit, less what is owed, to a status the store
// gave: what this replica could let through now.
func (c *Credit) Adjust(st [3]quota.Status) [3]quota.Status {
	for d := range st {
		if st[d].Limit > 0 {
			st[d].Remaining = min(max(st[d].Remaining+c.credit[d]-c.pending[d], 0), st[d].Burst)
		}
	}
	return st
}

// Status is the store's budget as it last answered, aged to at (the
// store's clock), plus the credit, less what is owed.
func (c *Credit) Status(at time.Time) [3]quota.Status {
	var s [3]quota.Status
	el := max(at.Sub(c.stAt), 0)
	for d, x := range c.limits {
		if x.PerMinute == 0 {
			continue
		}
		st := c.st[d]
		if st.Limit != x.PerMinute { // limits changed since
			st = quota.Status{Limit: x.PerMinute, Burst: x.EffectiveBurst()}
			st.Remaining = st.Burst
		}
		rem := st.Remaining
		if el > 0 {
			st.Reset = max(st.Reset-el, 0)
			// Remaining is Burst less ⌈backlog/T⌉, T = 1min/PerMinute.
			hi, lo := bits.Mul64(uint64(st.Reset), uint64(x.PerMinute))
			if hi < uint64(time.Minute) {
				q, r := bits.Div64(hi, lo, uint64(time.Minute))
				if r > 0 {
					q++
				}
				if q < uint64(st.Burst) {
					rem = max(rem, st.Burst-int64(q))
				}
			}
		}
		st.Remaining = min(max(rem+c.credit[d]-c.pending[d], 0), st.Burst)
		s[d] = st
	}
	return s
}
