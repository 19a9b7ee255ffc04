package limit

import (
	"testing"
	"time"
)

func ok200(now time.Time) Sample {
	return Sample{Now: now, Latency: 200 * time.Millisecond, InFlight: 1}
}

func TestWindowedAIMDWindowDecisions(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name    string
		samples []Sample // all inside the first window [t0, t0+10s)
		want    int      // after Tick at t0+10s, starting from 10
	}{
		{"clean window adds one", []Sample{ok200(at(0)), ok200(at(5 * s))}, 11},
		{"429 backs off by 0.7", []Sample{ok200(at(0)), {Now: at(3 * s), Dropped: true}}, 7},
		{"429 with tiny latency still backs off", []Sample{{Now: at(0), Dropped: true, Latency: time.Microsecond}}, 7},
		{"p95 above threshold backs off", latencies(20, 2, 13*s), 7},
		{"one outlier in 20 is below p95", latencies(20, 1, 13*s), 11},
		{"p95 equal to threshold is not overload", latencies(20, 20, 12*s), 11},
		{"queue age above threshold backs off", []Sample{{Now: at(0), Latency: s, QueueWait: 31 * s}}, 7},
		{"queue age equal to threshold is not overload", []Sample{{Now: at(0), Latency: s, QueueWait: 30 * s}}, 11},
		{"queue age counts on dropped samples too", []Sample{{Now: at(0), Latency: s}, {Now: at(s), Dropped: true, QueueWait: 31 * s}}, 7},
		{"empty window does nothing", nil, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := must(NewWindowedAIMD(WindowedAIMDConfig{Initial: 10}))
			w.Tick(t0)
			for _, smp := range tc.samples {
				w.Update(smp)
			}
			w.Tick(at(10*s - 1))
			if got := w.Limit(); got != 10 {
				t.Fatalf("inside the window: Limit() = %d, want 10", got)
			}
			w.Tick(at(10 * s))
			if got := w.Limit(); got != tc.want {
				t.Fatalf("after the window: Limit() = %d, want %d", got, tc.want)
			}
		})
	}
}

// latencies returns n successful samples within the first second, the
// last `slow` of which take d (the rest 1s).
func latencies(n, slow int, d time.Duration) []Sample {
	out := make([]Sample, n)
	for i := range out {
		lat := time.Second
		if i >= n-slow {
			lat = d
		}
		out[i] = Sample{Now: at(time.Duration(i) * time.Millisecond), Latency: lat, InFlight: 1}
	}
	return out
}

func TestWindowedAIMDNoChangeInsideWindow(t *testing.T) {
	w := must(NewWindowedAIMD(WindowedAIMDConfig{Initial: 10}))
	for i := range 100 {
		w.Update(Sample{Now: at(time.Duration(i) * 99 * time.Millisecond), Dropped: true})
		if got := w.Limit(); got != 10 {
			t.Fatalf("sample %d at +%v: Limit() = %d, want 10", i, time.Duration(i)*99*time.Millisecond, got)
		}
	}
}

func TestWindowedAIMDUpdateClosesWindow(t *testing.T) {
	w := must(NewWindowedAIMD(WindowedAIMDConfig{Initial: 10}))
	w.Update(Sample{Now: at(0), Dropped: true})
	// This sample closes the first window and opens the second; it must
	// not be judged with the first window's 429.
	w.Update(ok200(at(10 * time.Second)))
	if got := w.Limit(); got != 7 {
		t.Fatalf("Limit() = %d, want 7", got)
	}
}

func TestWindowedAIMDCooldown(t *testing.T) {
	const win = 10 * time.Second
	tests := []struct {
		name     string
		cooldown time.Duration
		want     []int // limit after each of the clean windows following a backoff from 10 to 7
	}{
		{"default cooldown holds one window", 0, []int{7, 8, 9}},
		{"two-window cooldown holds two", 2 * win, []int{7, 7, 8}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := must(NewWindowedAIMD(WindowedAIMDConfig{Initial: 10, Cooldown: tc.cooldown}))
			w.Update(Sample{Now: at(0), Dropped: true})
			w.Tick(at(win))
			if got := w.Limit(); got != 7 {
				t.Fatalf("after backoff: Limit() = %d, want 7", got)
			}
			for i, want := range tc.want {
				start := win * time.Duration(i+1)
				w.Update(ok200(at(start)))
				w.Update(ok200(at(start + time.Second)))
				w.Tick(at(start + win))
				if got := w.Limit(); got != want {
					t.Fatalf("clean window %d: Limit() = %d, want %d", i+1, got, want)
				}
			}
		})
	}
	t.Run("cooldown does not block a further backoff", func(t *testing.T) {
		w := must(NewWindowedAIMD(WindowedAIMDConfig{Initial: 10}))
		w.Update(Sample{Now: at(0), Dropped: true})
		w.Tick(at(win))
		w.Update(Sample{Now: at(win + time.Second), Dropped: true})
		w.Tick(at(2 * win))
		if got := w.Limit(); got != 4 {
			t.Fatalf("Limit() = %d, want 4 (10 → 7 → 4)", got)
		}
	})
}

func TestWindowedAIMDTick(t *testing.T) {
	w := must(NewWindowedAIMD(WindowedAIMDConfig{Initial: 10}))
	w.Update(Sample{Now: at(time.Second), Dropped: true}) // opens the window at +1s
	w.Tick(at(10 * time.Second))
	if got := w.Limit(); got != 10 {
		t.Fatalf("Tick before window end: Limit() = %d, want 10", got)
	}
	w.Tick(at(11 * time.Second))
	if got := w.Limit(); got != 7 {
		t.Fatalf("Tick at window end: Limit() = %d, want 7", got)
	}
	for i := range 10 { // idle windows: nothing to judge, nothing changes
		w.Tick(at(time.Duration(21+10*i) * time.Second))
	}
	if got := w.Limit(); got != 7 {
		t.Fatalf("after idle windows: Limit() = %d, want 7", got)
	}
}

func TestWindowedAIMDBounds(t *testing.T) {
	t.Run("backoff stops at min", func(t *testing.T) {
		w := must(NewWindowedAIMD(WindowedAIMDConfig{}))
		for i := range 10 {
			w.Update(Sample{Now: at(time.Duration(i) * 10 * time.Second), Dropped: true})
		}
		if got := w.Limit(); got != DefaultWindowedMin {
			t.Fatalf("Limit() = %d, want %d", got, DefaultWindowedMin)
		}
	})
	t.Run("growth stops at max", func(t *testing.T) {
		w := must(NewWindowedAIMD(WindowedAIMDConfig{}))
		for i := range 100 {
			w.Update(ok200(at(time.Duration(i) * 10 * time.Second)))
		}
		if got := w.Limit(); got != DefaultWindowedMax {
			t.Fatalf("Limit() = %d, want %d", got, DefaultWindowedMax)
		}
	})
}

// NextTick asks for a Tick only when a window holding samples ends: an
// empty or unopened window asks for nothing, so an idle host is not woken.
func TestWindowedAIMDNextTick(t *testing.T) {
	const s = time.Second
	w := must(NewWindowedAIMD(WindowedAIMDConfig{Initial: 10}))
	if at, ok := w.NextTick(); ok {
		t.Fatalf("before any sample: NextTick = %v", at)
	}
	w.Tick(t0)
	if at, ok := w.NextTick(); ok {
		t.Fatalf("empty window: NextTick = %v", at)
	}
	w.Update(ok200(at(3 * s)))
	if next, ok := w.NextTick(); !ok || !next.Equal(at(10*s)) {
		t.Fatalf("window with a sample: NextTick = %v, %v; want its end t0+10s", next, ok)
	}
	w.Tick(at(10 * s))
	if at, ok := w.NextTick(); ok {
		t.Fatalf("after the window closed: NextTick = %v", at)
	}
	if got := w.Limit(); got != 11 {
		t.Fatalf("Limit() = %d, want 11", got)
	}
}
