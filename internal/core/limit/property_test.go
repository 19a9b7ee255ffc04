package limit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// randomSamples draws a sequence mixing successes, drops, zero and huge
// latencies, idle and saturated InFlight, long queue waits, and time
// steps from none to several windows.
func randomSamples(seed uint64, n int) []Sample {
	r := rand.New(rand.NewPCG(seed, 1))
	now := t0
	out := make([]Sample, n)
	for i := range out {
		now = now.Add(time.Duration(r.Int64N(int64(3 * time.Second))))
		if r.IntN(50) == 0 {
			now = now.Add(time.Minute)
		}
		s := Sample{
			Now:       now,
			Latency:   time.Duration(r.Int64N(int64(20 * time.Second))),
			InFlight:  r.IntN(1200),
			Dropped:   r.IntN(8) == 0,
			QueueWait: time.Duration(r.Int64N(int64(40 * time.Second))),
		}
		switch r.IntN(20) {
		case 0:
			s.Latency = 0
		case 1:
			s.Latency = time.Microsecond
		case 2:
			s.InFlight = 0
		}
		out[i] = s
	}
	return out
}

func TestPropertyBoundsAndDeterminism(t *testing.T) {
	tests := []struct {
		kind   string
		p      Params
		lo, hi int
	}{
		{KindFixed, Params{}, DefaultFixedLimit, DefaultFixedLimit},
		{KindFixed, Params{Initial: 1}, 1, 1},
		{KindAIMD, Params{}, DefaultAIMDMin, DefaultAIMDMax},
		{KindAIMD, Params{Initial: 2, Min: 1, Max: 7, Backoff: 0.5, SlowThreshold: 10 * time.Second}, 1, 7},
		{KindWindowedAIMD, Params{}, DefaultWindowedMin, DefaultWindowedMax},
		{KindWindowedAIMD, Params{Initial: 3, Min: 2, Max: 5, Backoff: 0.1, Window: 30 * time.Second, Cooldown: time.Minute}, 2, 5},
		{KindGradient2, Params{}, DefaultGradient2Min, DefaultGradient2Max},
		{KindGradient2, Params{Initial: 1, Min: 1, Max: 3, Smoothing: 1, LongWindow: 1, QueueSize: 100, Tolerance: 1}, 1, 3},
		{KindVegas, Params{}, DefaultVegasMin, DefaultVegasMax},
		{KindVegas, Params{Initial: 5, Min: 2, Max: 12, Smoothing: 0.3, ProbeMultiplier: 1, Seed: 42}, 2, 12},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%+v", tc.kind, tc.p), func(t *testing.T) {
			for seed := range uint64(25) {
				samples := randomSamples(seed, 2000)
				first := run(t, tc.kind, tc.p, samples, tc.lo, tc.hi)
				second := run(t, tc.kind, tc.p, samples, tc.lo, tc.hi)
				if i := firstDiff(first, second); i >= 0 {
					t.Fatalf("seed %d: same samples, different limits from sample %d: %d vs %d", seed, i, first[i], second[i])
				}
			}
		})
	}
}

// run feeds samples to a fresh algorithm (ticking windowed ones between
// samples, as a host would) and returns the limit after each sample.
func run(t *testing.T, kind string, p Params, samples []Sample, lo, hi int) []int {
	t.Helper()
	a, err := New(kind, p)
	if err != nil {
		t.Fatal(err)
	}
	lo = max(lo, 1)
	limits := make([]int, len(samples))
	for i, s := range samples {
		if w, ok := a.(*WindowedAIMD); ok && i%3 == 0 {
			w.Tick(s.Now.Add(-time.Millisecond))
		}
		a.Update(s)
		l := a.Limit()
		if l < lo || l > hi {
			t.Fatalf("sample %d (%+v): Limit() = %d, outside [%d, %d]", i, s, l, lo, hi)
		}
		limits[i] = l
	}
	return limits
}

func firstDiff(a, b []int) int {
	if slices.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}
