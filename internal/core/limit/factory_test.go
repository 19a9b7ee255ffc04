package limit

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestNewBuildsEachKindWithDefaults(t *testing.T) {
	tests := []struct {
		kind      string
		wantType  Algorithm
		wantLimit int
	}{
		{KindFixed, (*Fixed)(nil), DefaultFixedLimit},
		{KindAIMD, (*AIMD)(nil), DefaultAIMDInitial},
		{KindWindowedAIMD, (*WindowedAIMD)(nil), DefaultWindowedInitial},
		{KindGradient2, (*Gradient2)(nil), DefaultGradient2Initial},
		{KindVegas, (*Vegas)(nil), DefaultVegasInitial},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			a, err := New(tc.kind, Params{})
			if err != nil {
				t.Fatal(err)
			}
			if reflect.TypeOf(a) != reflect.TypeOf(tc.wantType) {
				t.Fatalf("New(%q) = %T, want %T", tc.kind, a, tc.wantType)
			}
			if got := a.Limit(); got != tc.wantLimit {
				t.Fatalf("Limit() = %d, want %d", got, tc.wantLimit)
			}
		})
	}
}

func TestNewAppliesOverrides(t *testing.T) {
	a := must(New(KindAIMD, Params{Initial: 50, Min: 10, Max: 60, Backoff: 0.5, SlowThreshold: time.Second}))
	a.Update(Sample{Now: t0, Latency: 2 * time.Second, InFlight: 50})
	if got := a.Limit(); got != 25 {
		t.Fatalf("Limit() = %d, want 25", got)
	}
}

func TestNewDefaultInitialClampedToNarrowedBounds(t *testing.T) {
	tests := []struct {
		name string
		kind string
		p    Params
		want int
	}{
		{"aimd max below default initial", KindAIMD, Params{Min: 1, Max: 10}, 10},
		{"windowed min above default initial", KindWindowedAIMD, Params{Min: 8}, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := must(New(tc.kind, tc.p))
			if got := a.Limit(); got != tc.want {
				t.Fatalf("Limit() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name      string
		kind      string
		p         Params
		wantField string
		wantText  string // substring of the message
	}{
		{"unknown kind", "bbr", Params{}, "kind", "valid kinds: fixed, aimd, windowed_aimd, gradient2, vegas"},
		{"empty kind", "", Params{}, "kind", "valid kinds"},
		{"kind is case-sensitive", "AIMD", Params{}, "kind", "valid kinds"},
		{"min above max", KindAIMD, Params{Min: 50, Max: 10}, "min", "must be <= max (10)"},
		{"default min above explicit max", KindGradient2, Params{Max: 10}, "min", "must be <= max (10), got 20"},
		{"negative min", KindVegas, Params{Min: -1}, "min", ">= 1"},
		{"negative max", KindAIMD, Params{Max: -1}, "max", ">= 1"},
		{"negative fixed limit", KindFixed, Params{Initial: -3}, "initial", ">= 1"},
		{"explicit initial above max", KindAIMD, Params{Initial: 500}, "initial", "within [min, max] = [20, 200]"},
		{"explicit initial below min", KindWindowedAIMD, Params{Initial: 1, Min: 2}, "initial", "within [min, max]"},
		{"backoff of 1", KindAIMD, Params{Backoff: 1}, "backoff", "(0, 1)"},
		{"backoff above 1", KindWindowedAIMD, Params{Backoff: 1.5}, "backoff", "(0, 1)"},
		{"negative backoff", KindAIMD, Params{Backoff: -0.1}, "backoff", "(0, 1)"},
		{"negative slow threshold", KindAIMD, Params{SlowThreshold: -time.Second}, "slow_threshold", ">= 0"},
		{"window too short", KindWindowedAIMD, Params{Window: 5 * time.Second}, "window", "[10s, 30s]"},
		{"window too long", KindWindowedAIMD, Params{Window: time.Minute}, "window", "[10s, 30s]"},
		{"negative cooldown", KindWindowedAIMD, Params{Cooldown: -time.Second}, "cooldown", "> 0"},
		{"negative latency threshold", KindWindowedAIMD, Params{LatencyThreshold: -1}, "latency_threshold", "> 0"},
		{"negative queue age threshold", KindWindowedAIMD, Params{QueueAgeThreshold: -1}, "queue_age_threshold", "> 0"},
		{"tolerance below 1", KindGradient2, Params{Tolerance: 0.9}, "tolerance", ">= 1"},
		{"smoothing above 1", KindGradient2, Params{Smoothing: 1.1}, "smoothing", "(0, 1]"},
		{"negative smoothing", KindVegas, Params{Smoothing: -0.5}, "smoothing", "(0, 1]"},
		{"negative long window", KindGradient2, Params{LongWindow: -1}, "long_window", ">= 1"},
		{"negative queue size", KindGradient2, Params{QueueSize: -4}, "queue_size", ">= 1"},
		{"negative probe multiplier", KindVegas, Params{ProbeMultiplier: -1}, "probe_multiplier", ">= 1"},
		{"field for another kind", KindAIMD, Params{Tolerance: 2}, "tolerance", "does not apply to aimd; it is used by: gradient2"},
		{"bounds on fixed", KindFixed, Params{Max: 10}, "max", "does not apply to fixed"},
		{"window on aimd", KindAIMD, Params{Window: 10 * time.Second}, "window", "used by: windowed_aimd"},
		{"seed on gradient2", KindGradient2, Params{Seed: 1}, "seed", "used by: vegas"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(tc.kind, tc.p)
			if err == nil {
				t.Fatalf("New(%q, %+v) succeeded, want an error", tc.kind, tc.p)
			}
			if a != nil {
				t.Fatalf("New returned a non-nil Algorithm %#v with its error", a)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is %T, want *ConfigError", err, err)
			}
			if ce.Field != tc.wantField {
				t.Fatalf("Field = %q, want %q (error: %v)", ce.Field, tc.wantField, err)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("error %q does not mention %q", err, tc.wantText)
			}
		})
	}
}

// TestParamsYAMLTags keeps the config-file spelling snake_case and
// matching the names ConfigError reports.
func TestParamsYAMLTags(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	typ := reflect.TypeFor[Params]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue // not read from a file (TimeScale)
		}
		if !snake.MatchString(name) {
			t.Errorf("Params.%s has yaml name %q, want snake_case", f.Name, name)
		}
	}
}
