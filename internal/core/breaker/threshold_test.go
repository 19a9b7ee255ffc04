package breaker

import (
	"testing"
	"time"
)

func TestDerivedSlowThreshold(t *testing.T) {
	ms := time.Millisecond
	// mix repeats a pattern of healthy latencies n times.
	mix := func(n int, pattern ...time.Duration) []time.Duration {
		var out []time.Duration
		for range n {
			out = append(out, pattern...)
		}
		return out
	}
	nine1s := []time.Duration{1000 * ms, 1000 * ms, 1000 * ms, 1000 * ms, 1000 * ms, 1000 * ms, 1000 * ms, 1000 * ms, 1000 * ms, 3000 * ms}
	tests := []struct {
		name    string
		cfg     Config
		feed    []time.Duration // OK latencies, in order
		want    time.Duration
		samples int
	}{
		{"no samples: the default", Config{}, nil, DefaultSlowDefault, 0},
		{"9 samples: still the default", Config{}, mix(9, 100*ms), DefaultSlowDefault, 9},
		{"configured default", Config{SlowDefault: 4 * time.Second}, mix(5, 100*ms), 4 * time.Second, 5},
		// 90% at 1s and 10% at 3s: p95 is 3s, the median 1s. The
		// threshold is 2 × 3s, not anything near 2 × 1s.
		{"p95 with headroom, not the median", Config{}, mix(10, nine1s...), 6 * time.Second, 100},
		{"configured headroom", Config{SlowHeadroom: 3}, mix(10, nine1s...), 9 * time.Second, 100},
		{"floor", Config{}, mix(30, 100*ms), DefaultSlowFloor, 30},
		{"configured floor", Config{SlowFloor: 300 * ms}, mix(30, 100*ms), 300 * ms, 30},
		{"MinCalls also gates samples", Config{MinCalls: 5}, mix(5, 800*ms), 1600 * ms, 5},
		{"fixed threshold wins", Config{SlowThreshold: 5 * time.Second}, mix(10, nine1s...), 5 * time.Second, 100},
		// The ring keeps the last 256: after 256 fast samples the old
		// slow ones are gone.
		{"bounded ring forgets", Config{}, append(mix(256, 3000*ms), mix(256, 600*ms)...), 1200 * ms, HealthySamples},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, tc.cfg)
			now := t0
			for i, d := range tc.feed {
				now = now.Add(100 * ms) // 10 calls/s: the window never trips on these
				tk, err := b.Allow(now)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				b.Done(now, tk, Outcome{Kind: OK, Latency: d})
			}
			if got := b.SlowThreshold(); got != tc.want {
				t.Errorf("SlowThreshold %v, want %v", got, tc.want)
			}
			if tk, _ := b.Allow(now); tk.SlowAfter() != tc.want {
				t.Errorf("ticket SlowAfter %v, want %v", tk.SlowAfter(), tc.want)
			}
			if st := b.Stats(now); st.HealthySamples != tc.samples || st.Slow != 0 {
				t.Errorf("stats %+v, want %d healthy samples and no slow call", st, tc.samples)
			}
		})
	}
}

// Only successful, fast calls seen while Closed teach the threshold: a
// brownout's slow calls, errors, 429s and cancellations do not.
func TestHealthySamplesExcludeTheUnhealthy(t *testing.T) {
	// Rates of 1 over a minute: nothing here is meant to trip it.
	b := mustNew(t, Config{SlowRate: 1, ErrorRate: 1, Window: time.Minute, ConsecutiveErrors: -1})
	now := t0
	for range 100 {
		now = now.Add(100 * time.Millisecond)
		calls(t, b, now, 1, Outcome{Kind: OK, Latency: time.Second})
	}
	if got := b.SlowThreshold(); got != 2*time.Second {
		t.Fatalf("setup: threshold %v, want 2s", got)
	}
	for _, o := range []Outcome{
		{Kind: OK, Latency: 5 * time.Second},
		{Kind: Error, Latency: 1500 * time.Millisecond},
		{Kind: RateLimited, Latency: 1500 * time.Millisecond},
		{Kind: Cancelled, Latency: 1500 * time.Millisecond},
	} {
		for range 50 {
			now = now.Add(100 * time.Millisecond)
			calls(t, b, now, 1, o)
		}
	}
	if got, n := b.SlowThreshold(), b.Stats(now).HealthySamples; got != 2*time.Second || n != 100 {
		t.Errorf("threshold %v from %d samples; want 2s from 100", got, n)
	}
}

// A healthy but widely spread latency distribution must not trip: half
// of all calls are above the median, none above 2 × p95.
func TestHealthySpreadDoesNotTrip(t *testing.T) {
	b := mustNew(t, Config{})
	now := t0
	for i := range 2000 {
		now = now.Add(50 * time.Millisecond)
		lat := time.Duration(200+(i*7919)%2800) * time.Millisecond // 0.2s–3s, spread evenly
		calls(t, b, now, 1, Outcome{Kind: OK, Latency: lat})
	}
	if tr := b.Transitions(); len(tr) != 0 {
		t.Fatalf("healthy spread tripped: %q", trail(tr))
	}
	if st := b.Stats(now); st.SlowRate != 0 {
		t.Errorf("slow rate %v on healthy traffic (threshold %v)", st.SlowRate, st.SlowThreshold)
	}
}
