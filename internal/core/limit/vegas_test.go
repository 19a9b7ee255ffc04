package limit

import (
	"testing"
	"time"
)

func TestVegasGrowsWithoutQueueing(t *testing.T) {
	v := must(NewVegas(VegasConfig{}))
	v.Update(busy(v, t0, baseRTT)) // sets rttNoLoad
	v.Update(busy(v, t0, baseRTT))
	// No queueing at limit 20: L = 1, so the limit jumps by beta = 6.
	if got := v.Limit(); got != 26 {
		t.Fatalf("after one no-queue sample: Limit() = %d, want 26", got)
	}
	warm(v, 2000, baseRTT)
	if got := v.Limit(); got != DefaultVegasMax {
		t.Fatalf("Limit() = %d, want %d", got, DefaultVegasMax)
	}
}

func TestVegasAppLimitedDoesNotGrow(t *testing.T) {
	v := must(NewVegas(VegasConfig{}))
	for range 100 {
		v.Update(Sample{Now: t0, Latency: baseRTT, InFlight: 9})
	}
	if got := v.Limit(); got != DefaultVegasInitial {
		t.Fatalf("Limit() = %d, want %d", got, DefaultVegasInitial)
	}
}

func TestVegasShrinksWhenRTTRises(t *testing.T) {
	v := must(NewVegas(VegasConfig{Initial: 100}))
	v.Update(busy(v, t0, baseRTT))
	prev := v.Limit()
	for i := range 40 {
		// queue = ceil(limit·(1 − 100/300)) ≫ beta: decrease by L.
		v.Update(busy(v, t0, 3*baseRTT))
		if got := v.Limit(); got >= prev {
			t.Fatalf("sample %d: limit %d did not fall below %d", i, got, prev)
		}
		prev = v.Limit()
	}
}

func TestVegasRuleBands(t *testing.T) {
	// At limit 100, L = 2: alpha 6, beta 12, threshold 2. With rttNoLoad
	// 100ms, queue = ceil(100·(1 − 100/rtt)).
	tests := []struct {
		name string
		rtt  time.Duration
		want int
	}{
		{"queue 0 <= threshold: +beta", 100 * time.Millisecond, 112},
		{"queue 2 <= threshold: +beta", 102 * time.Millisecond, 112},
		{"queue 3 < alpha: +L", 103 * time.Millisecond, 102},
		{"queue 6 in the sweet spot: hold", 106 * time.Millisecond, 100},
		{"queue 12 in the sweet spot: hold", 113 * time.Millisecond, 100},
		{"queue 14 > beta: -L", 115 * time.Millisecond, 98},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := must(NewVegas(VegasConfig{Initial: 100}))
			v.Update(busy(v, t0, baseRTT))
			v.Update(busy(v, t0, tc.rtt))
			if got := v.Limit(); got != tc.want {
				t.Fatalf("Limit() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestVegasDrops(t *testing.T) {
	t.Run("a drop decreases by L even when app-limited", func(t *testing.T) {
		v := must(NewVegas(VegasConfig{Initial: 100}))
		v.Update(Sample{Now: t0, Dropped: true})
		if got := v.Limit(); got != 98 {
			t.Fatalf("Limit() = %d, want 98", got)
		}
	})
	t.Run("fast drops do not poison rttNoLoad", func(t *testing.T) {
		v := must(NewVegas(VegasConfig{Initial: 50}))
		v.Update(busy(v, t0, baseRTT))
		for range 100 {
			v.Update(Sample{Now: t0, Dropped: true, Latency: time.Microsecond, InFlight: v.Limit()})
		}
		if v.rttNoLoad != baseRTT {
			t.Fatalf("rttNoLoad = %v, want %v", v.rttNoLoad, baseRTT)
		}
		if got := v.Limit(); got != DefaultVegasMin {
			t.Fatalf("after 100 drops: Limit() = %d, want %d", got, DefaultVegasMin)
		}
		// Had rttNoLoad become 1µs, this would read as a full queue.
		v.Update(busy(v, t0, baseRTT))
		if got := v.Limit(); got <= DefaultVegasMin {
			t.Fatalf("Limit() = %d, want growth above %d", got, DefaultVegasMin)
		}
	})
}

func TestVegasProbeResetsNoLoad(t *testing.T) {
	v := must(NewVegas(VegasConfig{ProbeMultiplier: 1, Seed: 7}))
	v.Update(Sample{Now: t0, Latency: 50 * time.Millisecond, InFlight: 0})
	// The probe fires within jitter·1·20 < 20 samples and adopts the
	// current RTT as the new no-load RTT.
	for range 20 {
		v.Update(Sample{Now: t0, Latency: baseRTT, InFlight: 0})
	}
	if v.rttNoLoad != baseRTT {
		t.Fatalf("rttNoLoad = %v, want %v after a probe", v.rttNoLoad, baseRTT)
	}
}

func TestVegasSmoothing(t *testing.T) {
	v := must(NewVegas(VegasConfig{Smoothing: 0.5}))
	v.Update(busy(v, t0, baseRTT))
	v.Update(busy(v, t0, baseRTT))
	// Halfway from 20 to 26.
	if got := v.Limit(); got != 23 {
		t.Fatalf("Limit() = %d, want 23", got)
	}
}

func TestLog10Step(t *testing.T) {
	for _, tc := range []struct {
		limit float64
		want  int
	}{{0, 1}, {1, 1}, {9.9, 1}, {10, 1}, {99, 1}, {100, 2}, {999.9, 2}, {1000, 3}, {12345, 4}} {
		if got := log10Step(tc.limit); got != tc.want {
			t.Errorf("log10Step(%v) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}
