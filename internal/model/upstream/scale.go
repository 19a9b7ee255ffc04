package upstream

import (
	"math"
	"time"
)

// Scaled returns c with every time multiplied by t: TTFT, TPOT, prefill
// per 1k tokens, the jitter's bounds, every brownout's window and
// latencies, every failure's window, delay, silence (for) and Retry-After. It is
// sluice mock's --time-scale, the same factor sluice load's --time-scale
// applies to a scenario's clients: with t 0.25 a scenario runs four times
// faster. Concurrency (max_running, max_waiting) is not scaled: with
// every call taking t times as long, the same slots serve 1/t times the
// requests a second, which is exactly the rate the load generator sends.
// Shapes (lognormal sigma, multipliers, fractions, rates, batch
// slowdown) and token counts are not times and stay.
//
// The result records the factor in TimeScale (times any it held
// already). A t that is not positive and finite returns c unchanged.
func (c Config) Scaled(t float64) Config {
	if !(t > 0) || math.IsInf(t, 0) || t == 1 {
		return c
	}
	d := func(v *time.Duration) { *v = scaleDuration(*v, t) }
	d(&c.TTFT)
	d(&c.TPOT)
	d(&c.PrefillPer1K)
	d(&c.Jitter.Max)
	d(&c.Jitter.P50)
	d(&c.Jitter.P99)
	c.Brownouts = append([]Brownout(nil), c.Brownouts...)
	for i := range c.Brownouts {
		b := &c.Brownouts[i]
		d(&b.Start)
		d(&b.End)
		d(&b.Latency)
		d(&b.LatencyTo)
	}
	c.Failures = append([]Failure(nil), c.Failures...)
	for i := range c.Failures {
		f := &c.Failures[i]
		d(&f.RetryAfter)
		d(&f.Start)
		d(&f.End)
		d(&f.Delay)
		d(&f.For)
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	c.TimeScale *= t
	return c
}

// scaleDuration is d×t, rounded to the nanosecond. A positive d stays
// positive, so a window or latency the script set never turns into the
// zero that means "unset" or "never ends".
func scaleDuration(d time.Duration, t float64) time.Duration {
	if d == 0 {
		return 0
	}
	f := math.Round(float64(d) * t)
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	v := time.Duration(f)
	if v == 0 {
		if d > 0 {
			return 1
		}
		return -1
	}
	return v
}
