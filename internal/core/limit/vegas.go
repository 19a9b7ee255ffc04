package limit

import (
	"math"
	"math/rand/v2"
	"time"
)

// Vegas defaults, from Netflix concurrency-limits VegasLimit.Builder
// (initialLimit 20, maxConcurrency 1000, smoothing 1.0, probeMultiplier
// 30). Netflix has no minimum beyond clamping at 1, hence Min 1.
const (
	DefaultVegasInitial         = 20
	DefaultVegasMin             = 1
	DefaultVegasMax             = 1000
	DefaultVegasSmoothing       = 1.0
	DefaultVegasProbeMultiplier = 30
)

// VegasConfig configures Vegas. Zero fields take the defaults above.
type VegasConfig struct {
	Initial         int     // yaml "initial"
	Min             int     // yaml "min"
	Max             int     // yaml "max"
	Smoothing       float64 // yaml "smoothing", in (0, 1]
	ProbeMultiplier int     // yaml "probe_multiplier"

	// Seed (yaml "seed") seeds the probe jitter. Netflix draws it from
	// ThreadLocalRandom; we take a seed so runs are reproducible. Give
	// limiters of different upstreams different seeds if their probes
	// should not line up.
	Seed uint64
}

// Vegas is Netflix VegasLimit, after TCP Vegas: it estimates how many
// calls are queued rather than being served,
//
//	queue = ceil(limit · (1 − rttNoLoad/rtt))
//
// where rttNoLoad is the minimum RTT seen, and with L = max(1,
// floor(log10(limit))) it moves the limit by: +6L if queue <= L
// (no queueing), +L if queue < 3L, −L if queue > 6L, else holds. It does
// not grow while fewer than half the limit's slots are in use. Every
// jitter·ProbeMultiplier·limit RTT samples (jitter in [0.5, 1)) it takes
// the current RTT as the new rttNoLoad, so a baseline that rose for good
// (a bigger model, a longer prompt mix) is eventually learned.
//
// Deviation from Netflix, for drops: Netflix feeds a drop's RTT through
// the probe and minimum-RTT logic before decreasing, so a fast 429 can
// set rttNoLoad to nearly zero, after which every real sample reads as
// heavy queueing; or it is swallowed as a "new minimum" and never
// decreases at all. We never use a drop's latency: a drop always
// decreases by L and leaves rttNoLoad and the probe count alone.
type Vegas struct {
	limit     float64
	min, max  float64
	smoothing float64

	rttNoLoad       time.Duration
	probeMultiplier int
	probeCount      int
	probeJitter     float64
	rng             *rand.Rand
}

var _ Algorithm = (*Vegas)(nil)

// NewVegas returns a Vegas limit, or a *ConfigError.
func NewVegas(cfg VegasConfig) (*Vegas, error) {
	const k = KindVegas
	initial, lo, hi, err := resolveBounds(k, cfg.Initial, cfg.Min, cfg.Max,
		boundsDefaults{DefaultVegasInitial, DefaultVegasMin, DefaultVegasMax})
	if err != nil {
		return nil, err
	}
	v := &Vegas{limit: float64(initial), min: float64(lo), max: float64(hi)}
	if v.smoothing, err = resolveSmoothing(k, cfg.Smoothing, DefaultVegasSmoothing); err != nil {
		return nil, err
	}
	if v.probeMultiplier, err = resolvePositiveInt(k, "probe_multiplier", cfg.ProbeMultiplier, DefaultVegasProbeMultiplier); err != nil {
		return nil, err
	}
	v.rng = rand.New(rand.NewPCG(cfg.Seed, 0x5eed_ce9a5))
	v.resetProbeJitter()
	return v, nil
}

// Limit returns the current limit.
func (v *Vegas) Limit() int { return floorLimit(v.limit) }

// Update applies one sample.
func (v *Vegas) Update(s Sample) {
	if s.Dropped {
		v.apply(v.limit - float64(log10Step(v.limit)))
		return
	}
	if s.Latency <= 0 {
		return // Netflix rejects rtt <= 0; a zero baseline would break the queue estimate
	}
	v.probeCount++
	if float64(v.probeCount) >= v.probeJitter*float64(v.probeMultiplier)*v.limit {
		v.resetProbeJitter()
		v.probeCount = 0
		v.rttNoLoad = s.Latency
		return
	}
	if v.rttNoLoad == 0 || s.Latency < v.rttNoLoad {
		v.rttNoLoad = s.Latency
		return
	}
	if float64(s.InFlight)*2 < v.limit {
		return
	}
	queue := int(math.Ceil(v.limit * (1 - float64(v.rttNoLoad)/float64(s.Latency))))
	step := log10Step(v.limit)
	alpha, beta, threshold := 3*step, 6*step, step
	switch {
	case queue <= threshold:
		v.apply(v.limit + float64(beta))
	case queue < alpha:
		v.apply(v.limit + float64(step))
	case queue > beta:
		v.apply(v.limit - float64(step))
	}
}

// apply clamps before smoothing, as Netflix does, so the smoothed value
// is a blend of two in-bounds values and stays in bounds.
func (v *Vegas) apply(target float64) {
	target = clampF(target, v.min, v.max)
	v.limit = (1-v.smoothing)*v.limit + v.smoothing*target
}

func (v *Vegas) resetProbeJitter() {
	v.probeJitter = 0.5 + 0.5*v.rng.Float64()
}

// log10Step is Netflix's Log10RootIntFunction: max(1, floor(log10(n)))
// of the integer limit. Counting digits avoids math.Log10(1000) landing a
// hair under 3.
func log10Step(limit float64) int {
	n, d := int(limit), 0
	for n >= 10 {
		n /= 10
		d++
	}
	return max(1, d)
}
