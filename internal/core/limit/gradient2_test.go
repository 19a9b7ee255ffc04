package limit

import (
	"testing"
	"time"
)

const baseRTT = 100 * time.Millisecond

// warm feeds n busy samples at rtt.
func warm(a Algorithm, n int, rtt time.Duration) {
	for i := range n {
		a.Update(busy(a, at(time.Duration(i)*time.Millisecond), rtt))
	}
}

func TestGradient2SteadyRTTGrowsToMax(t *testing.T) {
	g := must(NewGradient2(Gradient2Config{}))
	prev := g.Limit()
	for i := range 1000 {
		g.Update(busy(g, at(time.Duration(i)*time.Millisecond), baseRTT))
		if got := g.Limit(); got < prev {
			t.Fatalf("sample %d: limit fell from %d to %d under steady RTT", i, prev, got)
		}
		prev = g.Limit()
	}
	if prev != DefaultGradient2Max {
		t.Fatalf("Limit() = %d, want %d", prev, DefaultGradient2Max)
	}
}

func TestGradient2AppLimitedDoesNotGrow(t *testing.T) {
	g := must(NewGradient2(Gradient2Config{Initial: 40}))
	for i := range 1000 {
		g.Update(Sample{Now: at(time.Duration(i) * time.Millisecond), Latency: baseRTT, InFlight: 19})
	}
	if got := g.Limit(); got != 40 {
		t.Fatalf("Limit() = %d, want 40", got)
	}
}

func TestGradient2RTTDoublingShrinks(t *testing.T) {
	g := must(NewGradient2(Gradient2Config{}))
	warm(g, 1000, baseRTT)
	if got := g.Limit(); got != DefaultGradient2Max {
		t.Fatalf("baseline: Limit() = %d, want %d", got, DefaultGradient2Max)
	}
	prev := g.Limit()
	for i := range 30 {
		g.Update(busy(g, at(time.Second+time.Duration(i)*time.Millisecond), 2*baseRTT))
		if got := g.Limit(); got >= prev {
			t.Fatalf("sample %d at 2×RTT: limit %d did not fall below %d", i, got, prev)
		}
		prev = g.Limit()
	}
	if prev > 100 {
		t.Fatalf("after 30 samples at 2×RTT: Limit() = %d, want <= 100", prev)
	}
}

func TestGradient2WithinToleranceHolds(t *testing.T) {
	g := must(NewGradient2(Gradient2Config{}))
	warm(g, 1000, baseRTT)
	// 1.4× the long RTT is inside the 1.5 tolerance: no shrink.
	warm(g, 50, 140*time.Millisecond)
	if got := g.Limit(); got != DefaultGradient2Max {
		t.Fatalf("Limit() = %d, want %d", got, DefaultGradient2Max)
	}
}

// TestGradient2FastFailurePitfall: a burst of instant 429s must read as
// overload, not as an idle upstream with a tiny RTT.
func TestGradient2FastFailurePitfall(t *testing.T) {
	newWarm := func() *Gradient2 {
		g := must(NewGradient2(Gradient2Config{}))
		warm(g, 100, baseRTT)
		return g
	}
	t.Run("dropped samples never raise the limit", func(t *testing.T) {
		g := newWarm()
		before, longBefore := g.Limit(), g.longRTT
		if before <= DefaultGradient2Min || before >= DefaultGradient2Max {
			t.Fatalf("baseline limit %d should be strictly inside the bounds for this test to bite", before)
		}
		prev := before
		for i := range 1000 {
			g.Update(Sample{Now: at(time.Second + time.Duration(i)*time.Microsecond), Latency: time.Microsecond, InFlight: g.Limit(), Dropped: true})
			if got := g.Limit(); got > prev {
				t.Fatalf("drop %d raised the limit from %d to %d", i, prev, got)
			}
			prev = g.Limit()
		}
		if prev != DefaultGradient2Min {
			t.Fatalf("after 1000 drops: Limit() = %d, want %d", prev, DefaultGradient2Min)
		}
		if g.longRTT != longBefore {
			t.Fatalf("drops moved the long RTT from %v to %v", longBefore, g.longRTT)
		}
	})
	t.Run("control: the same latencies as successes would raise it", func(t *testing.T) {
		g := newWarm()
		before := g.Limit()
		warm(g, 1000, time.Microsecond)
		if got := g.Limit(); got <= before {
			t.Fatalf("Limit() = %d, want above %d; the pitfall test above proves nothing", got, before)
		}
	})
	t.Run("a drop shrinks even when app-limited", func(t *testing.T) {
		g := newWarm()
		before := g.Limit()
		g.Update(Sample{Now: at(time.Second), Dropped: true, InFlight: 0})
		if got := g.Limit(); got >= before {
			t.Fatalf("Limit() = %d, want below %d", got, before)
		}
	})
}

func TestGradient2DriftCorrection(t *testing.T) {
	g := must(NewGradient2(Gradient2Config{}))
	warm(g, 1000, baseRTT)
	// Latency recovers to 40ms after long overload: without correction
	// the 600-sample average would need hundreds of samples to approach
	// 80ms; with the ×0.95 decay it takes a few dozen.
	warm(g, 30, 40*time.Millisecond)
	if got := time.Duration(g.longRTT); got > 80*time.Millisecond {
		t.Fatalf("long RTT = %v after recovery, want <= 80ms", got)
	}
}

func TestGradient2Inputs(t *testing.T) {
	tests := []struct {
		name string
		cfg  Gradient2Config
		s    Sample
		want int
	}{
		{"zero latency success is ignored", Gradient2Config{Initial: 50}, Sample{InFlight: 50}, 50},
		{"negative latency success is ignored", Gradient2Config{Initial: 50}, Sample{Latency: -time.Second, InFlight: 50}, 50},
		// 50·0.8 + (50+4)·0.2 = 50.8
		{"first busy sample adds smoothing·queueSize", Gradient2Config{Initial: 50}, Sample{Latency: baseRTT, InFlight: 50}, 50},
		// 50·0.8 + (50+20)·0.2 = 54
		{"queue size function", Gradient2Config{Initial: 50, QueueSizeFunc: func(l int) int { return l * 2 / 5 }}, Sample{Latency: baseRTT, InFlight: 50}, 54},
		{"queue size", Gradient2Config{Initial: 50, QueueSize: 20}, Sample{Latency: baseRTT, InFlight: 50}, 54},
		// 50·0.5 + (50·0.5)·0.5 = 37.5
		{"drop with smoothing 0.5", Gradient2Config{Initial: 50, Smoothing: 0.5}, Sample{Dropped: true}, 37},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := must(NewGradient2(tc.cfg))
			tc.s.Now = t0
			g.Update(tc.s)
			if got := g.Limit(); got != tc.want {
				t.Fatalf("Limit() = %d, want %d", got, tc.want)
			}
		})
	}
}
