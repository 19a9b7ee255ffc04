package limit

import "time"

// AIMD defaults, from Netflix concurrency-limits AIMDLimit.Builder
// (initialLimit 20, minLimit 20, maxLimit 200, backoffRatio 0.9).
const (
	DefaultAIMDInitial = 20
	DefaultAIMDMin     = 20
	DefaultAIMDMax     = 200
	DefaultAIMDBackoff = 0.9
)

// AIMDConfig configures AIMD. Zero fields take the defaults above.
type AIMDConfig struct {
	Initial int     // yaml "initial"
	Min     int     // yaml "min"
	Max     int     // yaml "max"
	Backoff float64 // yaml "backoff"; multiplier on drop, in (0, 1)

	// Timeout (yaml "slow_threshold"): a successful sample whose Latency
	// exceeds it counts as a drop. Zero disables the check. Netflix
	// defaults this to 5s of end-to-end time; we have no default because
	// the host chooses the latency signal, and 5s means very different
	// things for time-to-first-token and for a full completion.
	Timeout time.Duration
}

// AIMD is loss-based additive-increase/multiplicative-decrease, after
// Netflix AIMDLimit: +1 per success while the limit is actually being
// used, ×Backoff per drop (or per success slower than Timeout).
//
// Deviation from Netflix: Netflix keeps an int and truncates after every
// backoff, so each drop also throws away the fraction and the effective
// ratio is harsher than configured (20 falls to 5 in ten drops instead of
// 20·0.9¹⁰ ≈ 6.97). We keep the limit as a float and report its floor, so
// the limit after n drops is floor(initial·backoffⁿ), still shrinking
// monotonically toward Min even from small values.
type AIMD struct {
	limit    float64
	min, max float64
	backoff  float64
	timeout  time.Duration
}

var _ Algorithm = (*AIMD)(nil)

// NewAIMD returns an AIMD limit, or a *ConfigError.
func NewAIMD(cfg AIMDConfig) (*AIMD, error) {
	initial, lo, hi, err := resolveBounds(KindAIMD, cfg.Initial, cfg.Min, cfg.Max,
		boundsDefaults{DefaultAIMDInitial, DefaultAIMDMin, DefaultAIMDMax})
	if err != nil {
		return nil, err
	}
	backoff, err := resolveRatio(KindAIMD, "backoff", cfg.Backoff, DefaultAIMDBackoff)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 {
		return nil, cfgErr(KindAIMD, "slow_threshold", "must be >= 0 (0 disables the latency check), got %v", cfg.Timeout)
	}
	return &AIMD{
		limit:   float64(initial),
		min:     float64(lo),
		max:     float64(hi),
		backoff: backoff,
		timeout: cfg.Timeout,
	}, nil
}

// Limit returns the current limit.
func (a *AIMD) Limit() int { return floorLimit(a.limit) }

// Update applies one sample.
func (a *AIMD) Update(s Sample) {
	switch {
	case s.Dropped || (a.timeout > 0 && s.Latency > a.timeout):
		a.limit *= a.backoff
	case float64(s.InFlight*2) >= a.limit:
		// Growing only while at least half the limit is in use stops an
		// idle or lightly used limiter drifting up to Max and then
		// admitting a burst the upstream never proved it could take.
		// Half of the limit itself, fraction and all, as seed 000 has it.
		a.limit++
	default:
		return
	}
	a.limit = clampF(a.limit, a.min, a.max)
}
