package limit

import (
	"testing"
	"time"
)

func TestAIMDSingleStep(t *testing.T) {
	tests := []struct {
		name string
		cfg  AIMDConfig
		s    Sample
		want int
	}{
		{"success at half the limit increases", AIMDConfig{}, Sample{Latency: time.Second, InFlight: 10}, 21},
		{"success below half the limit holds", AIMDConfig{}, Sample{Latency: time.Second, InFlight: 9}, 20},
		{"drop backs off by 0.9", AIMDConfig{Initial: 100}, Sample{Dropped: true, InFlight: 100}, 90},
		{"drop at min stays at min", AIMDConfig{}, Sample{Dropped: true}, 20},
		{"success at max stays at max", AIMDConfig{Initial: 200}, Sample{InFlight: 200}, 200},
		{"custom backoff", AIMDConfig{Initial: 100, Backoff: 0.5}, Sample{Dropped: true}, 50},
		{"slow success counts as drop", AIMDConfig{Initial: 100, Timeout: 5 * time.Second}, Sample{Latency: 6 * time.Second, InFlight: 100}, 90},
		{"latency equal to timeout is not slow", AIMDConfig{Initial: 100, Timeout: 5 * time.Second}, Sample{Latency: 5 * time.Second, InFlight: 100}, 101},
		{"zero timeout disables latency check", AIMDConfig{Initial: 100}, Sample{Latency: time.Hour, InFlight: 100}, 101},
		{"dropped latency is irrelevant", AIMDConfig{Initial: 100}, Sample{Dropped: true, Latency: time.Microsecond, InFlight: 100}, 90},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := must(NewAIMD(tc.cfg))
			tc.s.Now = t0
			a.Update(tc.s)
			if got := a.Limit(); got != tc.want {
				t.Fatalf("Limit() = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAIMDArticleSequence reproduces the simulated run: start 20, min 5,
// max 200, ×0.9 per slow call. After n slow calls the limit is
// max(5, floor(20·0.9ⁿ)); Netflix's int truncation would instead give
// 18 16 14 12 10 9 8 7 6 5.
func TestAIMDArticleSequence(t *testing.T) {
	a := must(NewAIMD(AIMDConfig{Initial: 20, Min: 5, Max: 200, Timeout: 10 * time.Second}))
	want := []int{18, 16, 14, 13, 11, 10, 9, 8, 7, 6, 6, 5, 5, 5, 5}
	for i, w := range want {
		a.Update(Sample{Now: at(time.Duration(i) * time.Second), Latency: 15 * time.Second, InFlight: 20})
		if got := a.Limit(); got != w {
			t.Fatalf("after %d slow calls: Limit() = %d, want %d", i+1, got, w)
		}
	}
	t.Run("recovers additively", func(t *testing.T) {
		for range 3 {
			a.Update(busy(a, t0, time.Second))
		}
		if got := a.Limit(); got != 8 {
			t.Fatalf("Limit() = %d, want 8", got)
		}
	})
}

func TestAIMDGrowsToMaxOnlyWhenUsed(t *testing.T) {
	t.Run("used", func(t *testing.T) {
		a := must(NewAIMD(AIMDConfig{}))
		for range 500 {
			a.Update(busy(a, t0, time.Second))
		}
		if got := a.Limit(); got != DefaultAIMDMax {
			t.Fatalf("Limit() = %d, want %d", got, DefaultAIMDMax)
		}
	})
	t.Run("idle", func(t *testing.T) {
		a := must(NewAIMD(AIMDConfig{}))
		for range 500 {
			a.Update(Sample{Now: t0, Latency: time.Second, InFlight: 1})
		}
		if got := a.Limit(); got != DefaultAIMDInitial {
			t.Fatalf("Limit() = %d, want %d", got, DefaultAIMDInitial)
		}
	})
}
