package limit

import (
	"fmt"
	"math"
	"time"
)

// ConfigError reports an invalid setting. Field is the snake_case name
// used in config files (the Params yaml tag), so an operator can find it
// whether the value came from YAML or from a Go Config struct.
type ConfigError struct {
	Kind   string // algorithm kind, e.g. "aimd"
	Field  string // e.g. "backoff"
	Reason string // what is valid, and what was given
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("limit: %s: %s: %s", e.Kind, e.Field, e.Reason)
}

func cfgErr(kind, field, format string, args ...any) error {
	return &ConfigError{Kind: kind, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// boundsDefaults are one algorithm's documented initial/min/max defaults.
type boundsDefaults struct{ initial, min, max int }

// resolveBounds applies defaults and checks min <= initial <= max.
// A defaulted initial is clamped into a user-narrowed [min, max] rather
// than rejected, so setting only max: 10 on AIMD does not fail because
// of a default the user never wrote; an explicit initial outside the
// bounds is an error because it is almost certainly a typo.
func resolveBounds(kind string, initial, lo, hi int, d boundsDefaults) (int, int, int, error) {
	if lo < 0 {
		return 0, 0, 0, cfgErr(kind, "min", "must be >= 1 (0 selects the default %d), got %d", d.min, lo)
	}
	if hi < 0 {
		return 0, 0, 0, cfgErr(kind, "max", "must be >= 1 (0 selects the default %d), got %d", d.max, hi)
	}
	if initial < 0 {
		return 0, 0, 0, cfgErr(kind, "initial", "must be >= 1 (0 selects the default %d), got %d", d.initial, initial)
	}
	if lo == 0 {
		lo = d.min
	}
	if hi == 0 {
		hi = d.max
	}
	if lo > hi {
		return 0, 0, 0, cfgErr(kind, "min", "must be <= max (%d), got %d", hi, lo)
	}
	if initial == 0 {
		return min(max(d.initial, lo), hi), lo, hi, nil
	}
	if initial < lo || initial > hi {
		return 0, 0, 0, cfgErr(kind, "initial", "must be within [min, max] = [%d, %d], got %d", lo, hi, initial)
	}
	return initial, lo, hi, nil
}

// resolveRatio applies a default to a ratio that must lie in (0, 1)
// (exclusive at 1 because a backoff of 1 would never back off).
func resolveRatio(kind, field string, v, def float64) (float64, error) {
	if v == 0 {
		return def, nil
	}
	if !(v > 0 && v < 1) {
		return 0, cfgErr(kind, field, "must be in (0, 1) (0 selects the default %g), got %g", def, v)
	}
	return v, nil
}

// resolveSmoothing: 1 means "take the new estimate outright", which is
// Vegas's default, so the upper bound is inclusive.
func resolveSmoothing(kind string, v, def float64) (float64, error) {
	if v == 0 {
		return def, nil
	}
	if !(v > 0 && v <= 1) {
		return 0, cfgErr(kind, "smoothing", "must be in (0, 1] (0 selects the default %g), got %g", def, v)
	}
	return v, nil
}

func resolveDuration(kind, field string, v, def time.Duration) (time.Duration, error) {
	if v < 0 {
		return 0, cfgErr(kind, field, "must be > 0 (0 selects the default %v), got %v", def, v)
	}
	if v == 0 {
		return def, nil
	}
	return v, nil
}

func resolvePositiveInt(kind, field string, v, def int) (int, error) {
	if v < 0 {
		return 0, cfgErr(kind, field, "must be >= 1 (0 selects the default %d), got %d", def, v)
	}
	if v == 0 {
		return def, nil
	}
	return v, nil
}

// floorLimit turns an internal float limit into the reported int. The
// epsilon absorbs float error (e.g. 8.999999999999998 after a few
// multiplications) that would otherwise report one less than intended.
func floorLimit(f float64) int {
	return int(math.Floor(f + 1e-9))
}

func clampF(v, lo, hi float64) float64 {
	return math.Max(lo, math.Min(hi, v))
}
