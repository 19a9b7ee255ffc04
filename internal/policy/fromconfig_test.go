package policy

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

const timeScaleYAML = `
providers:
  - name: a
    kind: openai
    base_url: http://127.0.0.1:1/v1
    limits: {itpm: 6000, otpm: 1200, rpm: 60}
  - name: b
    kind: openai
    base_url: http://127.0.0.1:2/v1
    limit: {algorithm: windowed_aimd}
models:
  - name: m
    targets: [{provider: a, model: x}, {provider: b, model: x}]
`

// TestFromConfigTimeScale: a time-scaled config reaches every policy
// scaled, the defaults that live in code included, and its token
// budgets still let a scenario minute's tokens through at once.
func TestFromConfigTimeScale(t *testing.T) {
	c, err := config.Parse([]byte(timeScaleYAML), "ts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.Scaled(0.25)
	if err != nil {
		t.Fatal(err)
	}
	real, err := FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := FromConfig(sc)
	if err != nil {
		t.Fatalf("a scaled config the engine refuses (a window below a bound?): %v", err)
	}
	if fast.TimeScale != 0.25 || real.TimeScale != 0 {
		t.Errorf("engine time scale %v (unscaled %v), want 0.25 (and 0)", fast.TimeScale, real.TimeScale)
	}
	rb, fb := real.Scopes[0].Breaker, fast.Scopes[0].Breaker
	for _, d := range []struct {
		name       string
		real, fast time.Duration
	}{
		{"slow threshold before any latency (breaker default)", rb.SlowThreshold(), fb.SlowThreshold()},
		{"open_for_max (breaker default)", rb.OpenForMax(), fb.OpenForMax()},
		{"probe timeout", rb.ProbeTimeout(), fb.ProbeTimeout()},
		{"route timeout (config default)", real.Routes["m"].Timeout, fast.Routes["m"].Timeout},
		{"queue max_wait (config default)", real.Admission.MaxWait, fast.Admission.MaxWait},
	} {
		if d.fast != d.real/4 || d.real == 0 {
			t.Errorf("%s: %v scaled to %v, want %v", d.name, d.real, d.fast, d.real/4)
		}
	}
	if fast.Scopes[1].Limit == nil {
		t.Fatal("no windowed limit")
	}
	rl, fl := real.Budgets.Scopes[0], fast.Budgets.Scopes[0]
	if fl[quota.InputTokens].PerMinute != 4*rl[quota.InputTokens].PerMinute || fl[quota.InputTokens].Burst != rl[quota.InputTokens].PerMinute {
		t.Errorf("input tokens %+v scaled to %+v; want 4x the rate and a burst of the scenario's minute", rl[quota.InputTokens], fl[quota.InputTokens])
	}
	if fl[quota.OutputTokens].Burst != 1200 || rl[quota.OutputTokens].Burst != 0 {
		t.Errorf("output token bursts %d (unscaled %d), want 1200 (and the default, 0)", fl[quota.OutputTokens].Burst, rl[quota.OutputTokens].Burst)
	}
	if fl[quota.Requests].Burst != rl[quota.Requests].Burst {
		t.Errorf("request burst %d became %d", rl[quota.Requests].Burst, fl[quota.Requests].Burst)
	}
	if err := fl.Validate(); err != nil {
		t.Error(err)
	}
}

// admission.queue.hold_budget reaches the engine as written, and left
// out, as zero: the engine's own default (lifecycle.DefaultHoldBudget),
// which it scales with the config's time scale.
func TestFromConfigHoldBudget(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want time.Duration
	}{
		{"", 0},
		{"admission:\n  queue: {hold_budget: 300ms}\n", 300 * time.Millisecond},
	} {
		cfg, err := config.Parse([]byte(timeScaleYAML+c.yaml), "hold.yaml")
		if err != nil {
			t.Fatal(err)
		}
		lc, err := FromConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if lc.HoldBudget != c.want {
			t.Errorf("%q: hold budget %v, want %v", c.yaml, lc.HoldBudget, c.want)
		}
	}
}
