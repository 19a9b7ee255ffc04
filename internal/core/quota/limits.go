package quota

// EffectiveBurst is the burst the budget enforces: Burst, or PerMinute
// when Burst is zero (a full minute's allowance). It is the one
// definition every host and store uses, so a budget kept in memory, one
// kept in Redis and one replica's share of either agree on it. Zero for
// an unlimited dimension.
func (x Limit) EffectiveBurst() int64 {
	if x.Burst == 0 {
		return x.PerMinute
	}
	return x.Burst
}

// Divide is l shared by n replicas: each limited dimension's rate and
// effective burst divided by n, rounded down (so n shares never add up
// to more than l), but at least 1 (a share that admits nothing would
// refuse every request, where the whole budget admits some). Unlimited
// dimensions stay unlimited; n ≤ 1 returns l unchanged.
func (l Limits) Divide(n int) Limits {
	if n <= 1 {
		return l
	}
	for d := range l {
		if l[d].PerMinute == 0 {
			continue
		}
		l[d] = Limit{PerMinute: max(l[d].PerMinute/int64(n), 1), Burst: max(l[d].EffectiveBurst()/int64(n), 1)}
	}
	return l
}
