package limit

// Gradient2 defaults, from Netflix concurrency-limits Gradient2Limit.Builder
// (initialLimit 20, minLimit 20, maxConcurrency 200, smoothing 0.2,
// queueSize 4, longWindow 600, rttTolerance 1.5).
const (
	DefaultGradient2Initial    = 20
	DefaultGradient2Min        = 20
	DefaultGradient2Max        = 200
	DefaultGradient2Smoothing  = 0.2
	DefaultGradient2QueueSize  = 4
	DefaultGradient2LongWindow = 600
	DefaultGradient2Tolerance  = 1.5
)

// Constants fixed in Netflix's source rather than configurable there.
const (
	// gradient2Warmup is ExpAvgMeasurement's warmup: the first samples
	// are plainly averaged so one early outlier does not anchor the EMA.
	gradient2Warmup = 10
	// gradient2MinGradient caps a single step's shrink at half the limit,
	// so one outlier RTT cannot collapse the limit.
	gradient2MinGradient = 0.5
	// gradient2DriftRatio and gradient2DriftDecay: when the long RTT is
	// more than twice the latest, latency has recovered from a long
	// overload and the 600-sample EMA would take ages to follow; decay it
	// by 5% per sample instead (0.95 in current Netflix, 0.9 in older).
	gradient2DriftRatio = 2.0
	gradient2DriftDecay = 0.95
)

// Gradient2Config configures Gradient2. Zero fields take the defaults.
type Gradient2Config struct {
	Initial    int     // yaml "initial"
	Min        int     // yaml "min"
	Max        int     // yaml "max"
	Smoothing  float64 // yaml "smoothing", in (0, 1]
	Tolerance  float64 // yaml "tolerance", >= 1: RTT growth tolerated before shrinking
	LongWindow int     // yaml "long_window", samples in the long-RTT EMA
	QueueSize  int     // yaml "queue_size", headroom added per step

	// QueueSizeFunc, if set, overrides QueueSize with a function of the
	// current (integer) limit, as Netflix's queueSizeFunction allows, so
	// headroom can scale with the limit. It has no yaml form.
	QueueSizeFunc func(limit int) int
}

// Gradient2 is Netflix Gradient2Limit: it compares the latest RTT with a
// long exponential average of RTT and shrinks the limit in proportion
// when the latest is slower by more than Tolerance, otherwise grows it by
// QueueSize, all smoothed:
//
//	gradient = clamp(tolerance·longRTT/shortRTT, 0.5, 1)
//	target   = limit·gradient + queueSize
//	limit    = clamp(limit·(1−smoothing) + target·smoothing, min, max)
//
// Deviation from Netflix, for drops: Netflix ignores didDrop and feeds the
// dropped call's RTT like any other. A timeout then has a long RTT and
// shrinks the limit, but a fast 429 has a tiny RTT that reads as "no
// queueing" and grows it, and it drags the long RTT down too. We never
// use a drop's latency; a drop instead applies the steepest gradient the
// formula allows (0.5) with no queueSize headroom, which at the default
// smoothing is a ×0.9 step (the same as AIMD), and it applies even when
// app-limited, since the app-limited check exists only to stop growth.
type Gradient2 struct {
	limit     float64
	min, max  float64
	smoothing float64
	tolerance float64
	queueSize func(limit int) int

	longRTT   float64 // nanoseconds
	longSum   float64 // warmup samples' sum; the drift decay does not touch it, as in Netflix
	longCount int     // samples seen, for the warmup average
	longAlpha float64 // EMA factor 2/(LongWindow+1)
}

var _ Algorithm = (*Gradient2)(nil)

// NewGradient2 returns a Gradient2 limit, or a *ConfigError.
func NewGradient2(cfg Gradient2Config) (*Gradient2, error) {
	const k = KindGradient2
	initial, lo, hi, err := resolveBounds(k, cfg.Initial, cfg.Min, cfg.Max,
		boundsDefaults{DefaultGradient2Initial, DefaultGradient2Min, DefaultGradient2Max})
	if err != nil {
		return nil, err
	}
	g := &Gradient2{limit: float64(initial), min: float64(lo), max: float64(hi)}
	if g.smoothing, err = resolveSmoothing(k, cfg.Smoothing, DefaultGradient2Smoothing); err != nil {
		return nil, err
	}
	g.tolerance = cfg.Tolerance
	if g.tolerance == 0 {
		g.tolerance = DefaultGradient2Tolerance
	}
	// Netflix requires >= 1: below 1 the steady state itself reads as
	// queueing and the limit sinks to Min.
	if !(g.tolerance >= 1 && g.tolerance < 1e9) {
		return nil, cfgErr(k, "tolerance", "must be a finite value >= 1 (0 selects the default %g), got %g", DefaultGradient2Tolerance, cfg.Tolerance)
	}
	window, err := resolvePositiveInt(k, "long_window", cfg.LongWindow, DefaultGradient2LongWindow)
	if err != nil {
		return nil, err
	}
	g.longAlpha = 2.0 / float64(window+1)
	qs, err := resolvePositiveInt(k, "queue_size", cfg.QueueSize, DefaultGradient2QueueSize)
	if err != nil {
		return nil, err
	}
	g.queueSize = func(int) int { return qs }
	if cfg.QueueSizeFunc != nil {
		g.queueSize = cfg.QueueSizeFunc
	}
	return g, nil
}

// Limit returns the current limit.
func (g *Gradient2) Limit() int { return floorLimit(g.limit) }

// Update applies one sample.
func (g *Gradient2) Update(s Sample) {
	if s.Dropped {
		target := g.limit * gradient2MinGradient
		g.limit = clampF(g.limit*(1-g.smoothing)+target*g.smoothing, g.min, g.max)
		return
	}
	if s.Latency <= 0 {
		// No usable RTT (Netflix would divide by zero here); skip.
		return
	}
	queue := float64(g.queueSize(int(g.limit)))
	short := float64(s.Latency)
	long := g.addLong(short)
	if long/short > gradient2DriftRatio {
		g.longRTT *= gradient2DriftDecay
	}
	if float64(s.InFlight) < g.limit/2 {
		return // app-limited: latency says nothing about capacity we don't use
	}
	gradient := clampF(g.tolerance*long/short, gradient2MinGradient, 1)
	target := g.limit*gradient + queue
	g.limit = clampF(g.limit*(1-g.smoothing)+target*g.smoothing, g.min, g.max)
}

// addLong feeds the long-RTT average and returns its new value.
func (g *Gradient2) addLong(rtt float64) float64 {
	if g.longCount < gradient2Warmup {
		g.longCount++
		g.longSum += rtt
		g.longRTT = g.longSum / float64(g.longCount)
	} else {
		g.longRTT = g.longRTT*(1-g.longAlpha) + rtt*g.longAlpha
	}
	return g.longRTT
}
