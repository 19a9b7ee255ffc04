package breaker

import (
	"fmt"
	"time"
)

// Defaults for zero Config fields, chosen to work without tuning from a
// couple of requests a second to thousands (see the package comment, "Why
// these defaults"):
//
//   - Window 12 s and both rates 20%: a provider that turns slow (or
//     fails) for every call trips 0.2 × 12 s = 2.4 s of start times
//     after it began, at any traffic rate, while a spike shorter than
//     that never can: it cannot fill a fifth of the window. A partial
//     brownout (30% of calls slow) trips once it has lasted long enough
//     to be a fifth of the window's calls, about 8 s.
//   - 20% is ten times the share of a healthy provider's calls that
//     pass a threshold of twice its p95, so health does not trip it.
//   - MinCalls 10: no verdict on fewer calls than that.
//   - OpenFor 10 s, doubling per failed recovery up to 2 min, for a
//     provider probed with users' calls; a provider probed with the
//     gateway's own calls is probed every ProbeInterval instead (Steady).
const (
	DefaultWindow          = 12 * time.Second
	DefaultMinCalls        = 10
	DefaultErrorRate       = 0.2
	DefaultSlowRate        = 0.2
	DefaultSlowHeadroom    = 2.0
	DefaultSlowFloor       = time.Second
	DefaultSlowDefault     = 10 * time.Second
	DefaultOpenFor         = 10 * time.Second
	DefaultOpenForMax      = 2 * time.Minute
	DefaultProbes          = 3
	DefaultHalfOpenMaxWait = 30 * time.Second
	DefaultStepHold        = 10 * time.Second
	// DefaultSteadyInterval: a Steady breaker probes twice a second, so a
	// recovery is seen within half a second plus one healthy call.
	DefaultSteadyInterval = 500 * time.Millisecond

	// HealthySamples is how many recent healthy latencies the derived
	// slow threshold keeps (a ring: memory is bounded).
	HealthySamples = 256
)

// DefaultConsecutiveErrors: a run of this many errors in a row trips a
// Closed breaker whatever MinCalls and the window say, so a provider
// that is down hard trips at one request every few seconds too (doc.go,
// "A run of errors", gives the measurement).
const DefaultConsecutiveErrors = 5

// DefaultSteps returns the default fail-back shares: 10%, 25%, 50%, then
// all traffic.
func DefaultSteps() []float64 { return []float64{0.10, 0.25, 0.50, 1.00} }

// Config configures a Breaker. Zero fields take the defaults above.
type Config struct {
	// Window is how much of the calls' start times the rates judge: for
	// errors, the calls started in the last Window; for slowness, those
	// started in the Window that ends a slow threshold ago, whose fate is
	// all known (see the package comment).
	Window time.Duration
	// MinCalls is the fewest counted calls in the window for either rate
	// to trip: one slow call in a quiet window is not a 100% slow rate.
	// It is also how many healthy latencies the derived threshold needs
	// (capped at HealthySamples).
	MinCalls int
	// ErrorRate and SlowRate trip the breaker when errors/calls, or
	// slow/calls, reach them. Both in (0, 1].
	ErrorRate float64
	SlowRate  float64
	// ConsecutiveErrors trips a Closed breaker on a run of this many
	// errors in a row (calls that ended Error, with no OK or slow call
	// between them; 429s and cancels neither count nor break the run),
	// however few calls the window holds. Zero selects the default;
	// negative turns the rule off.
	ConsecutiveErrors int

	// SlowThreshold, if set, is the fixed slow threshold. When zero the
	// threshold is derived: SlowHeadroom (>= 1) times the p95 of the
	// provider's own healthy latencies (successful calls, not slow,
	// while Closed), at least SlowFloor; SlowDefault until MinCalls
	// healthy latencies exist.
	SlowThreshold time.Duration
	SlowHeadroom  float64
	SlowFloor     time.Duration
	SlowDefault   time.Duration

	// OpenFor is the time in Open before HalfOpen. Each consecutive
	// failed recovery (a bad probe, a re-trip while Recovering) doubles
	// it, up to OpenForMax (default: the larger of 2 min and OpenFor);
	// reaching Closed resets it. Set OpenForMax = OpenFor for no backoff.
	OpenFor    time.Duration
	OpenForMax time.Duration

	// Probes is how many calls HalfOpen admits at once; all must succeed
	// fast to start fail-back. It is also the fewest counted calls a
	// fail-back step needs before it may advance.
	Probes int
	// ProbeTimeout: a probe still in flight this long counts as slow.
	// Zero means the probe's own slow threshold.
	ProbeTimeout time.Duration
	// HalfOpenMaxWait: HalfOpen without a verdict this long goes back to
	// Open.
	HalfOpenMaxWait time.Duration
	// ProbeInterval, when set, makes HalfOpen trickle: it admits one
	// probe per interval (up to Probes in flight), a probe that fails or
	// times out only frees its place, and the first fast probe starts
	// fail-back. A provider that stays slow for minutes then costs one
	// probe per interval, and its recovery is noticed within about one
	// interval plus one call, instead of one open period plus a round of
	// probes. Zero keeps the classic round: Probes at once, all must pass.
	ProbeInterval time.Duration

	// Steady: the breaker's probes are the host's own calls, which cost
	// users nothing (synthetic probes), so it never backs off. Its open
	// time is ProbeInterval (and OpenFor, when set, is only the first
	// one's), failed recoveries do not lengthen it, and HalfOpen trickles
	// a probe every ProbeInterval for as long as they fail, however many
	// are still out, instead of giving up and reopening (HalfOpenMaxWait
	// does not apply). ProbeInterval defaults to DefaultSteadyInterval.
	Steady bool

	// Steps are the fail-back shares of traffic, strictly increasing in
	// (0, 1]; a final 1 is implied. StepHold is how long the provider
	// must stay calm at a step (with at least Probes calls) to advance.
	Steps    []float64
	StepHold time.Duration

	// TimeScale multiplies the breaker's own times: every default above
	// that is a duration, the width of its history's buckets (and so of
	// the Evidence it shares) and the minute marks and memory of its
	// derived slow threshold. A host replaying a scenario t times as
	// fast (sluice serve --time-scale) sets it with its durations
	// already scaled, so the breaker judges the scenario's time. Zero
	// means 1.
	TimeScale float64
}

// scaled is d times the time scale, never rounded down to zero.
func (c Config) scaled(d time.Duration) time.Duration {
	if c.TimeScale == 0 || c.TimeScale == 1 || d == 0 {
		return d
	}
	return max(1, time.Duration(float64(d)*c.TimeScale))
}

// settings is a Config with defaults applied and checked.
type settings struct {
	Config
}

func cfgErr(field, format string, args ...any) error {
	return fmt.Errorf("breaker: %s: %s", field, fmt.Sprintf(format, args...))
}

func resolve(c Config) (settings, error) {
	s := settings{Config: c}
	durs := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"window", &s.Window, c.scaled(DefaultWindow)},
		{"slow_threshold", &s.SlowThreshold, 0},
		{"slow_floor", &s.SlowFloor, c.scaled(DefaultSlowFloor)},
		{"slow_default", &s.SlowDefault, c.scaled(DefaultSlowDefault)},
		{"open_for", &s.OpenFor, c.scaled(DefaultOpenFor)},
		{"open_for_max", &s.OpenForMax, max(c.scaled(DefaultOpenForMax), s.OpenFor)},
		{"probe_timeout", &s.ProbeTimeout, 0},
		{"half_open_max_wait", &s.HalfOpenMaxWait, c.scaled(DefaultHalfOpenMaxWait)},
		{"step_hold", &s.StepHold, c.scaled(DefaultStepHold)},
		{"probe_interval", &s.ProbeInterval, 0},
	}
	if c.TimeScale < 0 {
		return s, cfgErr("time_scale", "must be > 0 (0 means 1), got %v", c.TimeScale)
	}
	for _, d := range durs {
		if *d.v < 0 {
			return s, cfgErr(d.name, "must be >= 0 (0 selects the default), got %v", *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if s.OpenForMax < s.OpenFor {
		return s, cfgErr("open_for_max", "must be >= open_for (%v), got %v", s.OpenFor, s.OpenForMax)
	}
	if s.Steady && s.ProbeInterval == 0 {
		s.ProbeInterval = c.scaled(DefaultSteadyInterval)
	}
	ints := []struct {
		name string
		v    *int
		def  int
	}{

		{"min_calls", &s.MinCalls, DefaultMinCalls},
		{"probes", &s.Probes, DefaultProbes},
	}
	for _, n := range ints {
		if *n.v < 0 {
			return s, cfgErr(n.name, "must be >= 1 (0 selects the default %d), got %d", n.def, *n.v)
		}
		if *n.v == 0 {
			*n.v = n.def
		}
	}
	switch {
	case s.ConsecutiveErrors == 0:
		s.ConsecutiveErrors = DefaultConsecutiveErrors
	case s.ConsecutiveErrors < 0:
		s.ConsecutiveErrors = 0 // off
	}
	if w := c.scaled(historyWidth); s.Window < w {
		return s, cfgErr("window", "must be at least %v, got %v", w, s.Window)
	}
	for _, r := range []struct {
		name string
		v    *float64
		def  float64
	}{{"error_rate", &s.ErrorRate, DefaultErrorRate}, {"slow_rate", &s.SlowRate, DefaultSlowRate}} {
		if *r.v == 0 {
			*r.v = r.def
		}
		if !(*r.v > 0 && *r.v <= 1) {
			return s, cfgErr(r.name, "must be in (0, 1] (0 selects the default %g), got %g", r.def, *r.v)
		}
	}
	if s.SlowHeadroom == 0 {
		s.SlowHeadroom = DefaultSlowHeadroom
	}
	if !(s.SlowHeadroom >= 1) {
		return s, cfgErr("slow_headroom", "must be >= 1 (0 selects the default %g), got %g", DefaultSlowHeadroom, s.SlowHeadroom)
	}
	if len(s.Steps) == 0 {
		s.Steps = DefaultSteps()
	} else {
		s.Steps = append([]float64(nil), s.Steps...)
	}
	for i, v := range s.Steps {
		if !(v > 0 && v <= 1) || (i > 0 && v <= s.Steps[i-1]) {
			return s, cfgErr("steps", "must be strictly increasing in (0, 1], got %v", c.Steps)
		}
	}
	if s.Steps[len(s.Steps)-1] != 1 {
		s.Steps = append(s.Steps, 1)
	}
	return s, nil
}
