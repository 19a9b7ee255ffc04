package fleet

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/quota"
)

// Recheck is how often a replica deciding alone asks the store whether
// it answers again (fleetstore's default health interval), and so how
// long ShareVerdict tells a client to wait, by default.
const Recheck = time.Second

// Share is one replica's budget while the store is down: the fleet's
// limits l divided by live, the replicas it last knew alive
// (quota.Limits.Divide), starting from its part of what the fleet had
// spent when the store last answered: last is the shared budget's
// status then, at at (a zero last: nothing known, the share starts
// full). See "Semantics" in the package comment for why this rounding
// and this count.
func Share(l quota.Limits, live int, last [3]quota.Status, at time.Time) (*quota.Budget, error) {
	live = max(live, 1)
	b, err := quota.New(l.Divide(live))
	if err != nil {
		return nil, err
	}
	b.Charge(at, Spent(last, live))
	return b, nil
}

// Spent is one replica's part of what the fleet had spent, as last
// reported: in each limited dimension, Burst − Remaining divided by
// live and rounded up, so that the live replicas' parts cover at least
// the whole.
func Spent(last [3]quota.Status, live int) quota.Cost {
	n := int64(max(live, 1))
	var spent [3]int64
	for d, s := range last {
		if s.Limit > 0 && s.Burst > s.Remaining {
			spent[d] = (s.Burst - s.Remaining + n - 1) / n
		}
	}
	return quota.Cost{Requests: spent[quota.Requests], InputTokens: spent[quota.InputTokens], OutputTokens: spent[quota.OutputTokens]}
}

// ShareVerdict is the answer to a cost a replica's share refused: one
// beyond the share's burst (Never) but within the fleet's is not a
// request that can never pass, only one that cannot pass while the
// replica decides alone, so it is told to come back after recheck, when
// the replica asks the store again (Recheck by default). Every other
// verdict stands.
func ShareVerdict(v quota.Verdict, l quota.Limits, cost quota.Cost, recheck time.Duration) quota.Verdict {
	if v.Never && Fits(l, cost) {
		return quota.Verdict{Dimension: v.Dimension, RetryAfter: recheck}
	}
	return v
}

// Fits reports whether cost is within every limited dimension's
// effective burst: whether the whole budget could ever let it through.
func Fits(l quota.Limits, c quota.Cost) bool {
	n := [3]int64{c.Requests, c.InputTokens, c.OutputTokens}
	for d, x := range l {
		if x.PerMinute > 0 && n[d] > x.EffectiveBurst() {
			return false
		}
	}
	return true
}

// Settlement is what a host passes to quota.Budget.Settle to apply
// signed units to a budget kept in memory: positive units are charged
// (an overrun, what a share owes), negative ones refunded (credit given
// back, a refund owed back). A budget in Redis takes the signed units
// as they are (fleetstore's settle script).
func Settlement(amt [3]int64) (reserved, actual quota.Cost) {
	pos := func(n int64) int64 { return max(n, 0) }
	neg := func(n int64) int64 { return max(-n, 0) }
	return quota.Cost{Requests: neg(amt[0]), InputTokens: neg(amt[1]), OutputTokens: neg(amt[2])},
		quota.Cost{Requests: pos(amt[0]), InputTokens: pos(amt[1]), OutputTokens: pos(amt[2])}
}
