package limit

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Algorithm kinds accepted by New.
const (
	KindFixed        = "fixed"
	KindAIMD         = "aimd"
	KindWindowedAIMD = "windowed_aimd"
	KindGradient2    = "gradient2"
	KindVegas        = "vegas"
)

// Kinds lists the kinds New accepts.
func Kinds() []string {
	return []string{KindFixed, KindAIMD, KindWindowedAIMD, KindGradient2, KindVegas}
}

// Params is a flat set of optional overrides, shaped for a config file.
// A zero field takes the chosen algorithm's default; a non-zero field
// the chosen algorithm does not use is an error, so a typo'd or
// misplaced setting is reported rather than silently ignored. Durations
// are Go durations ("10s"; yaml.v3 decodes those into time.Duration).
type Params struct {
	Initial           int           `yaml:"initial,omitempty"`             // all kinds (the limit itself for fixed)
	Min               int           `yaml:"min,omitempty"`                 // all but fixed
	Max               int           `yaml:"max,omitempty"`                 // all but fixed
	Backoff           float64       `yaml:"backoff,omitempty"`             // aimd, windowed_aimd
	SlowThreshold     time.Duration `yaml:"slow_threshold,omitempty"`      // aimd
	Window            time.Duration `yaml:"window,omitempty"`              // windowed_aimd
	Cooldown          time.Duration `yaml:"cooldown,omitempty"`            // windowed_aimd
	LatencyThreshold  time.Duration `yaml:"latency_threshold,omitempty"`   // windowed_aimd
	QueueAgeThreshold time.Duration `yaml:"queue_age_threshold,omitempty"` // windowed_aimd
	Tolerance         float64       `yaml:"tolerance,omitempty"`           // gradient2
	Smoothing         float64       `yaml:"smoothing,omitempty"`           // gradient2, vegas
	LongWindow        int           `yaml:"long_window,omitempty"`         // gradient2
	QueueSize         int           `yaml:"queue_size,omitempty"`          // gradient2
	ProbeMultiplier   int           `yaml:"probe_multiplier,omitempty"`    // vegas
	Seed              uint64        `yaml:"seed,omitempty"`                // vegas
	// TimeScale multiplies the algorithm's default durations and their
	// bounds, for a host replaying a scenario t times as fast (sluice
	// serve --time-scale), whose set durations are scaled already. Zero
	// means 1. Only windowed_aimd has times; the others count samples.
	TimeScale float64 `yaml:"-"`
}

// New builds the algorithm named by kind from p. Errors are
// *ConfigError naming the offending field (or "kind").
func New(kind string, p Params) (Algorithm, error) {
	if err := p.checkApplies(kind); err != nil {
		return nil, err
	}
	// Each branch returns its typed constructor's results separately so
	// a failed constructor yields a nil interface, not a typed nil.
	switch kind {
	case KindFixed:
		a, err := NewFixed(FixedConfig{Limit: p.Initial})
		if err != nil {
			return nil, err
		}
		return a, nil
	case KindAIMD:
		a, err := NewAIMD(AIMDConfig{
			Initial: p.Initial, Min: p.Min, Max: p.Max,
			Backoff: p.Backoff, Timeout: p.SlowThreshold,
		})
		if err != nil {
			return nil, err
		}
		return a, nil
	case KindWindowedAIMD:
		a, err := NewWindowedAIMD(WindowedAIMDConfig{
			Initial: p.Initial, Min: p.Min, Max: p.Max, Backoff: p.Backoff,
			Window: p.Window, Cooldown: p.Cooldown,
			LatencyThreshold: p.LatencyThreshold, QueueAgeThreshold: p.QueueAgeThreshold,
			TimeScale: p.TimeScale,
		})
		if err != nil {
			return nil, err
		}
		return a, nil
	case KindGradient2:
		a, err := NewGradient2(Gradient2Config{
			Initial: p.Initial, Min: p.Min, Max: p.Max, Smoothing: p.Smoothing,
			Tolerance: p.Tolerance, LongWindow: p.LongWindow, QueueSize: p.QueueSize,
		})
		if err != nil {
			return nil, err
		}
		return a, nil
	default: // KindVegas; checkApplies rejected anything else
		a, err := NewVegas(VegasConfig{
			Initial: p.Initial, Min: p.Min, Max: p.Max, Smoothing: p.Smoothing,
			ProbeMultiplier: p.ProbeMultiplier, Seed: p.Seed,
		})
		if err != nil {
			return nil, err
		}
		return a, nil
	}
}

// checkApplies rejects an unknown kind and any set field the kind does
// not use.
func (p Params) checkApplies(kind string) error {
	if !slices.Contains(Kinds(), kind) {
		return &ConfigError{Kind: kind, Field: "kind",
			Reason: fmt.Sprintf("unknown kind %q; valid kinds: %s", kind, strings.Join(Kinds(), ", "))}
	}
	all := Kinds()
	adaptive := all[1:]
	fields := []struct {
		name  string
		set   bool
		kinds []string
	}{
		{"initial", p.Initial != 0, all},
		{"min", p.Min != 0, adaptive},
		{"max", p.Max != 0, adaptive},
		{"backoff", p.Backoff != 0, []string{KindAIMD, KindWindowedAIMD}},
		{"slow_threshold", p.SlowThreshold != 0, []string{KindAIMD}},
		{"window", p.Window != 0, []string{KindWindowedAIMD}},
		{"cooldown", p.Cooldown != 0, []string{KindWindowedAIMD}},
		{"latency_threshold", p.LatencyThreshold != 0, []string{KindWindowedAIMD}},
		{"queue_age_threshold", p.QueueAgeThreshold != 0, []string{KindWindowedAIMD}},
		{"tolerance", p.Tolerance != 0, []string{KindGradient2}},
		{"smoothing", p.Smoothing != 0, []string{KindGradient2, KindVegas}},
		{"long_window", p.LongWindow != 0, []string{KindGradient2}},
		{"queue_size", p.QueueSize != 0, []string{KindGradient2}},
		{"probe_multiplier", p.ProbeMultiplier != 0, []string{KindVegas}},
		{"seed", p.Seed != 0, []string{KindVegas}},
	}
	for _, f := range fields {
		if !f.set {
			continue
		}
		if !slices.Contains(f.kinds, kind) {
			return &ConfigError{Kind: kind, Field: f.name,
				Reason: fmt.Sprintf("does not apply to %s; it is used by: %s", kind, strings.Join(f.kinds, ", "))}
		}
	}
	return nil
}
