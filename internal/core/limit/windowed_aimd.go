package limit

import (
	"slices"
	"time"
)

// WindowedAIMD defaults, from the LLM-gateway article this controller
// follows (evaluate every 10–30s; back off ×0.7 on 429/529/timeouts, on
// p95 latency above 12s, or on queue age above 30s; hold for a cooldown;
// otherwise +1; start at 4 within [1, 64]). The cooldown of one window is
// the article's; it is what makes the window right after a backoff unable
// to undo it.
const (
	DefaultWindowedInitial           = 4
	DefaultWindowedMin               = 1
	DefaultWindowedMax               = 64
	DefaultWindowedBackoff           = 0.7
	DefaultWindowedWindow            = 10 * time.Second
	DefaultWindowedLatencyThreshold  = 12 * time.Second
	DefaultWindowedQueueAgeThreshold = 30 * time.Second

	// MinWindowedWindow and MaxWindowedWindow bound Window to the
	// article's range: shorter windows hold too few LLM calls for a
	// meaningful p95, longer ones react after users have given up.
	MinWindowedWindow = 10 * time.Second
	MaxWindowedWindow = 30 * time.Second
)

// WindowedAIMDConfig configures WindowedAIMD. Zero fields take the
// defaults above; a zero Cooldown means one Window.
type WindowedAIMDConfig struct {
	Initial           int           // yaml "initial"
	Min               int           // yaml "min"
	Max               int           // yaml "max"
	Backoff           float64       // yaml "backoff", in (0, 1)
	Window            time.Duration // yaml "window", in [10s, 30s]
	Cooldown          time.Duration // yaml "cooldown"
	LatencyThreshold  time.Duration // yaml "latency_threshold"; compared with the window's p95
	QueueAgeThreshold time.Duration // yaml "queue_age_threshold"; compared with the window's max QueueWait
	// TimeScale multiplies the defaults above and the window's bounds
	// (Params.TimeScale); zero means 1.
	TimeScale float64
}

// scaled is d times the time scale ts (zero: 1).
func scaled(d time.Duration, ts float64) time.Duration {
	if ts == 0 || ts == 1 {
		return d
	}
	return max(1, time.Duration(float64(d)*ts))
}

// WindowedAIMD decides once per window instead of once per request. LLM
// calls are few and slow, and their latency varies with prompt and output
// length far more than with load, so per-request AIMD whipsaws; a window
// aggregates enough calls for a p95 and for "was there any 429" to mean
// something.
//
// A window opens at the first Update or Tick and closes at the first
// Update or Tick whose Now is at or after its start plus Window; the next
// window opens at that moment, and a sample that closes a window belongs
// to the next one. An empty window changes nothing.
type WindowedAIMD struct {
	limit, min, max int
	backoff         float64
	window          time.Duration
	cooldown        time.Duration
	latThreshold    time.Duration
	queueThreshold  time.Duration

	started       bool
	windowStart   time.Time
	cooldownUntil time.Time

	samples      int
	dropped      bool
	latencies    []time.Duration // successful samples only
	maxQueueWait time.Duration
}

var _ Algorithm = (*WindowedAIMD)(nil)

// NewWindowedAIMD returns a WindowedAIMD limit, or a *ConfigError.
func NewWindowedAIMD(cfg WindowedAIMDConfig) (*WindowedAIMD, error) {
	const k = KindWindowedAIMD
	initial, lo, hi, err := resolveBounds(k, cfg.Initial, cfg.Min, cfg.Max,
		boundsDefaults{DefaultWindowedInitial, DefaultWindowedMin, DefaultWindowedMax})
	if err != nil {
		return nil, err
	}
	w := &WindowedAIMD{limit: initial, min: lo, max: hi}
	if w.backoff, err = resolveRatio(k, "backoff", cfg.Backoff, DefaultWindowedBackoff); err != nil {
		return nil, err
	}
	ts := cfg.TimeScale
	if ts < 0 {
		return nil, cfgErr(k, "time_scale", "must be > 0 (0 means 1), got %v", ts)
	}
	if w.window, err = resolveDuration(k, "window", cfg.Window, scaled(DefaultWindowedWindow, ts)); err != nil {
		return nil, err
	}
	if lo, hi := scaled(MinWindowedWindow, ts), scaled(MaxWindowedWindow, ts); w.window < lo || w.window > hi {
		return nil, cfgErr(k, "window", "must be within [%v, %v], got %v", lo, hi, w.window)
	}
	if w.cooldown, err = resolveDuration(k, "cooldown", cfg.Cooldown, w.window); err != nil {
		return nil, err
	}
	if w.latThreshold, err = resolveDuration(k, "latency_threshold", cfg.LatencyThreshold, scaled(DefaultWindowedLatencyThreshold, ts)); err != nil {
		return nil, err
	}
	if w.queueThreshold, err = resolveDuration(k, "queue_age_threshold", cfg.QueueAgeThreshold, scaled(DefaultWindowedQueueAgeThreshold, ts)); err != nil {
		return nil, err
	}
	return w, nil
}

// Limit returns the current limit.
func (w *WindowedAIMD) Limit() int { return w.limit }

// Update closes the current window if s.Now has reached its end, then
// records s in the (possibly new) window.
func (w *WindowedAIMD) Update(s Sample) {
	w.Tick(s.Now)
	w.samples++
	if s.Dropped {
		w.dropped = true
	} else {
		w.latencies = append(w.latencies, s.Latency)
	}
	w.maxQueueWait = max(w.maxQueueWait, s.QueueWait)
}

// Tick closes the current window if now is at or after its end, without
// adding a sample. It is not part of Algorithm: a host using
// WindowedAIMD should call it at NextTick (lifecycle.Engine.NextTimer
// does this for both hosts), so that a window holding 429s is acted on
// even when traffic then stops and no further Update arrives. Tick before
// any sample opens the first window at now. Calling it more often than
// once per Window is harmless.
func (w *WindowedAIMD) Tick(now time.Time) {
	if !w.started {
		w.started = true
		w.windowStart = now
		return
	}
	if now.Before(w.windowStart.Add(w.window)) {
		return
	}
	w.decide(now)
	w.windowStart = now
	w.samples = 0
	w.dropped = false
	w.latencies = w.latencies[:0]
	w.maxQueueWait = 0
}

// NextTick is when the open window ends, if it holds a sample: the
// moment a Tick would act on it. An empty window changes nothing when it
// ends, so it asks for no Tick, and a host idle for hours is not woken
// every Window for nothing.
func (w *WindowedAIMD) NextTick() (time.Time, bool) {
	if !w.started || w.samples == 0 {
		return time.Time{}, false
	}
	return w.windowStart.Add(w.window), true
}

func (w *WindowedAIMD) decide(now time.Time) {
	if w.samples == 0 {
		return
	}
	if w.dropped || w.p95() > w.latThreshold || w.maxQueueWait > w.queueThreshold {
		w.limit = max(w.min, int(float64(w.limit)*w.backoff))
		w.cooldownUntil = now.Add(w.cooldown)
		return
	}
	// The cooldown covers windows that *started* before it ends: their
	// samples were taken while the upstream was still draining the
	// backlog that caused the backoff, so a clean result proves little.
	// With the default (one window) exactly the next window is held.
	if w.windowStart.Before(w.cooldownUntil) {
		return
	}
	w.limit = min(w.max, w.limit+1)
}

// p95 is the nearest-rank 95th percentile of successful latencies, or 0
// when the window held only drops (which already count as overload).
func (w *WindowedAIMD) p95() time.Duration {
	n := len(w.latencies)
	if n == 0 {
		return 0
	}
	slices.Sort(w.latencies)
	return w.latencies[(95*n+99)/100-1]
}
