package breaker

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // "" means valid
	}{
		{"zero config is valid", Config{}, ""},
		{"negative window", Config{Window: -time.Second}, "window"},
		{"window shorter than a bucket", Config{Window: 5}, "window"},
		{"negative min calls", Config{MinCalls: -3}, "min_calls"},
		{"error rate above 1", Config{ErrorRate: 1.5}, "error_rate"},
		{"negative slow rate", Config{SlowRate: -0.1}, "slow_rate"},
		{"rate of exactly 1 is valid", Config{ErrorRate: 1, SlowRate: 1}, ""},
		{"headroom below 1", Config{SlowHeadroom: 0.5}, "slow_headroom"},
		{"negative slow threshold", Config{SlowThreshold: -time.Second}, "slow_threshold"},
		{"negative probes", Config{Probes: -1}, "probes"},
		{"negative probe timeout", Config{ProbeTimeout: -1}, "probe_timeout"},
		{"steps not increasing", Config{Steps: []float64{0.5, 0.25}}, "steps"},
		{"step of zero", Config{Steps: []float64{0, 0.5}}, "steps"},
		{"step above 1", Config{Steps: []float64{0.5, 1.5}}, "steps"},
		{"max open time below open time", Config{OpenFor: time.Minute, OpenForMax: 30 * time.Second}, "open_for_max"},
		{"long open time raises the default max", Config{OpenFor: 5 * time.Minute}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.field != "" && (err == nil || !strings.Contains(err.Error(), "breaker: "+tc.field+":")):
				t.Errorf("error %v, want one naming %q", err, tc.field)
			}
		})
	}
}

// Steps without a final 1 get one, and the caller's slice is not kept.
func TestCustomSteps(t *testing.T) {
	steps := []float64{0.2, 0.6}
	b, now := recovering(t, Config{Steps: steps})
	steps[0] = 0.9
	var got []float64
	for range 3 {
		got = append(got, b.Weight(now))
		calls(t, b, now, DefaultProbes, fast)
		now = now.Add(DefaultStepHold)
		b.Tick(now)
	}
	if want := []float64{0.2, 0.6, 1}; !slices.Equal(got, want) {
		t.Errorf("weights %v, want %v", got, want)
	}
}

// A single step of 1 skips fail-back: good probes close the breaker.
func TestNoFailBackSteps(t *testing.T) {
	b, now := halfOpen(t, Config{Steps: []float64{1}})
	calls(t, b, now, DefaultProbes, fast)
	wantState(t, b, now, Closed, 1)
	if got := trail(b.Transitions()); got != "half_open>closed:probes_ok" {
		t.Errorf("transitions %q", got)
	}
}

// An undrained log keeps the newest transitions and counts the rest.
func TestTransitionLogIsBounded(t *testing.T) {
	b, now := halfOpen(t, Config{})
	for range maxLog {
		next, _ := b.NextTimer()
		b.Tick(next)
		now = next
	}
	got := b.Transitions()
	if len(got) != maxLog || b.Stats(now).DroppedTransitions != 0 {
		t.Fatalf("%d transitions, %d dropped; want %d and 0", len(got), b.Stats(now).DroppedTransitions, maxLog)
	}
	for range maxLog + 10 {
		next, _ := b.NextTimer()
		b.Tick(next)
		now = next
	}
	got = b.Transitions()
	if len(got) != maxLog || b.Stats(now).DroppedTransitions != 10 || !got[len(got)-1].At.Equal(now) {
		t.Errorf("%d transitions, %d dropped; want the newest %d and 10 dropped", len(got), b.Stats(now).DroppedTransitions, maxLog)
	}
	if len(b.Transitions()) != 0 {
		t.Error("Transitions reported something twice")
	}
}
