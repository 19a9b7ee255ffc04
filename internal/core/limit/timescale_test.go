package limit

import (
	"testing"
	"time"
)

// TestWindowedAIMDTimeScale: a scaled windowed AIMD takes scaled
// defaults, and its window's bounds scale with them, so a scenario's
// 10 s window replayed at a quarter (2.5 s) is accepted.
func TestWindowedAIMDTimeScale(t *testing.T) {
	a, err := New(KindWindowedAIMD, Params{TimeScale: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	w := a.(*WindowedAIMD)
	if w.window != 2500*time.Millisecond || w.cooldown != w.window || w.latThreshold != 3*time.Second || w.queueThreshold != 7500*time.Millisecond {
		t.Errorf("scaled defaults: window %v cooldown %v latency %v queue age %v", w.window, w.cooldown, w.latThreshold, w.queueThreshold)
	}
	if _, err := New(KindWindowedAIMD, Params{Window: 7500 * time.Millisecond, TimeScale: 0.25}); err != nil {
		t.Errorf("a 30 s window at a quarter: %v", err)
	}
	for _, win := range []time.Duration{2 * time.Second, 8 * time.Second} {
		if _, err := New(KindWindowedAIMD, Params{Window: win, TimeScale: 0.25}); err == nil {
			t.Errorf("window %v at a quarter (outside 2.5s..7.5s) accepted", win)
		}
	}
	if _, err := New(KindWindowedAIMD, Params{Window: 2500 * time.Millisecond}); err == nil {
		t.Error("a 2.5 s window unscaled accepted")
	}
	if _, err := New(KindAIMD, Params{TimeScale: 0.25}); err != nil {
		t.Errorf("TimeScale applies to every kind: %v", err)
	}
}
