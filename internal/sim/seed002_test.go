package sim

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// Seed 002's ramp, simulated: the storm its clients make without
// admission control, the seed's fix, and Sluice beyond it, held to the
// seed's table at minute 5.
func TestSeed002Ramp(t *testing.T) {
	f, err := scenario.Load("../../scenarios/seed-002.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]*report.Row{}
	for _, r := range res.Rows {
		rows[r.Name] = r
	}
	before, after, beyond := rows["before"], rows["after"], rows["beyond"]
	if before == nil || after == nil || beyond == nil {
		t.Fatalf("policies: %v", res.Rows)
	}
	minute := func(r *report.Row) *report.Minute { return &r.Timeline.Minutes[report.Seed002Minute-1] }

	// Before: the node's queue grows without bound and the clients'
	// retries pile on (the seed: 347 waiting, +35 %).
	if _, _, up := before.Timeline.Peak(report.Seed002Minute); up <= 347 {
		t.Errorf("before: the node's queue peaked at %d, want past the seed's 347", up)
	}
	if m := minute(before); m.RetryShare() < 0.35 || m.TTFTQuantile(.99) != report.Unreached {
		t.Errorf("before, minute 5: retries %.0f%%, TTFT p99 %s; want a storm past 35%% and answers past the timeout",
			100*m.RetryShare(), m.TTFTQuantile(.99))
	}
	// After: the queue is capped at the seed's 150.
	if both, _, _ := after.Timeline.Peak(len(after.Timeline.Minutes)); both > 150+5 {
		t.Errorf("after: %d waiting at the peak, want the cap of 150 (plus the node's few)", both)
	}
	// Beyond, at minute 5: rejections at once, retries within 3 % of
	// demand (the seed: 4.6 %), interactive first tokens well inside the
	// 8 s timeout.
	m := minute(beyond)
	if p := m.Rejection.Quantile(.99); p > time.Millisecond {
		t.Errorf("beyond, minute 5: rejection p99 %s, want ≤ 1ms", p)
	}
	if m.RetryShare() > 0.03 {
		t.Errorf("beyond, minute 5: retries %.1f%% of demand, want ≤ 3%%", 100*m.RetryShare())
	}
	for i := range beyond.Timeline.Minutes {
		bm := &beyond.Timeline.Minutes[i]
		if p := bm.TTFTQuantile(.99); p == report.Unreached || p > 4*time.Second {
			t.Errorf("beyond, minute %d: interactive TTFT p99 %s", i+1, p)
		}
		// Interactive is shed only once background is: in any minute
		// that refused interactive work, background kept almost nothing.
		bg := f.Scenario.Clients.All()[1].Schedule(1, 1).Integral(time.Duration(i)*time.Minute, time.Duration(i+1)*time.Minute)
		if bm.Shed(1) > 0 && float64(bm.Shed(2)) < 0.9*bg {
			t.Errorf("beyond, minute %d: %d interactive shed while background kept %.0f of its %.0f",
				i+1, bm.Shed(1), bg-float64(bm.Shed(2)), bg)
		}
		if bm.Shed(0) > 0 {
			t.Errorf("beyond, minute %d: %d critical shed", i+1, bm.Shed(0))
		}
	}
}
