package lifecycle

import "time"

// scaled is d times the engine's time scale (Config.TimeScale; zero
// means 1), never rounded to zero. A gateway replaying a scenario t
// times as fast (sluice serve --time-scale) gets its configured times
// scaled by config.Config.Scaled and the breakers', limits' and
// admission's defaults by their own TimeScale (policy.FromConfig); these are
// the engine's: the retry backoff's base, RetryAfterHold, the gap
// before a synthetic probe replaces a rate-limited one, the one-second
// floor of a no-target Retry-After, and the cap on a pause of a
// provider without a breaker.
func (e *Engine) scaled(d time.Duration) time.Duration {
	if e.timeScale == 0 || e.timeScale == 1 || d == 0 {
		return d
	}
	return max(1, time.Duration(float64(d)*e.timeScale))
}
