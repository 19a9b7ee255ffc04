package admission

import "time"

// scaled is d times Config.TimeScale (zero: 1), never rounded to zero.
// A host replaying a scenario t times as fast (sluice serve
// --time-scale) scales the durations it sets itself (MaxWait); these are
// the core's own: the drain meter's buckets, and RetryAfter's floor,
// ceiling and one-second fallback, so that a refused client is sent
// away for the scenario's time, not the wall clock's.
func (c Config) scaled(d time.Duration) time.Duration {
	if c.TimeScale == 0 || c.TimeScale == 1 || d == 0 {
		return d
	}
	return max(1, time.Duration(float64(d)*c.TimeScale))
}

// boundRetryAfter keeps d within [MinRetryAfter, MaxRetryAfter], both
// time-scaled.
func (c Config) boundRetryAfter(d time.Duration) time.Duration {
	return min(max(d, c.scaled(MinRetryAfter)), c.scaled(MaxRetryAfter))
}
