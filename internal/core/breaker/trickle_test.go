package breaker

import (
	"testing"
	"time"
)

// In trickle mode a long brownout costs one probe per interval, a slow
// probe only frees its place, and the first fast probe after recovery
// starts fail-back within about one interval plus one call.
func TestTrickleProbes(t *testing.T) {
	b, err := New(Config{
		MinCalls: 4, Window: 4 * time.Second, SlowThreshold: 2 * time.Second,
		OpenFor: time.Second, OpenForMax: time.Second, Probes: 10,
		ProbeInterval: 200 * time.Millisecond, HalfOpenMaxWait: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	// Trip it: four calls that each pass the slow threshold in flight.
	var tks []Ticket
	for i := range 4 {
		tk, err := b.Allow(at(time.Duration(i) * time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		tks = append(tks, tk)
	}
	for i, tk := range tks {
		b.Slow(at(2*time.Second+time.Duration(i)*time.Millisecond+1), tk)
	}
	if st, _ := b.State(at(2100 * time.Millisecond)); st != Open {
		t.Fatalf("state %v, want open", st)
	}
	// The provider stays slow until 20 s. Offer a call every 50 ms; each
	// probe admitted before 20 s never answers within the timeout.
	var probes []Ticket
	recovered := time.Duration(0)
	for now := 3 * time.Second; now < 25*time.Second; now += 50 * time.Millisecond {
		b.Tick(at(now))
		if st, _ := b.State(at(now)); st == Recovering {
			recovered = now
			break
		}
		tk, err := b.Allow(at(now))
		if err != nil {
			continue
		}
		if !tk.Probe() {
			t.Fatalf("at %v a non-probe call was admitted", now)
		}
		probes = append(probes, tk)
		if now >= 20*time.Second {
			b.Done(at(now+time.Second), tk, Outcome{Kind: OK, Latency: time.Second})
		}
	}
	if recovered == 0 || recovered > 21300*time.Millisecond {
		t.Fatalf("recovered at %v; want within an interval and a call of 20 s", recovered)
	}
	// At most one probe per 200 ms while it was slow, never a flood.
	if n := len(probes); n > int((recovered-3*time.Second)/(200*time.Millisecond))+2 {
		t.Errorf("%d probes in %v: more than one per interval", n, recovered-3*time.Second)
	}
	if s := b.Stats(at(recovered)); s.ProbeFailures == 0 {
		t.Error("no probe failures counted while the provider was slow")
	}
}

// HealthyP95 is reported once MinCalls healthy latencies are in, as the
// 95th percentile of them, for a host that hedges at it.
func TestHealthyP95(t *testing.T) {
	b, err := New(Config{MinCalls: 20})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, ok := b.HealthyP95(); ok {
		t.Fatal("a p95 with no samples")
	}
	for i := range 100 {
		tk, _ := b.Allow(t0)
		b.Done(t0, tk, Outcome{Kind: OK, Latency: time.Duration(i+1) * time.Millisecond})
	}
	p95, ok := b.HealthyP95()
	if !ok || p95 != 95*time.Millisecond {
		t.Fatalf("p95 %v %v, want 95ms", p95, ok)
	}
}
