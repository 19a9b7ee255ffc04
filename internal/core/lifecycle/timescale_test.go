package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
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

// TestEngineTimeScale: the engine's own constants scale. A provider's
// 500 ms Retry-After is waited out at real time (under RetryAfterHold),
// but at a quarter it stands for 2 s of the scenario, which pauses the
// provider instead; and the retry backoff's base and the no-target
// Retry-After floor shrink with the scale.
func TestEngineTimeScale(t *testing.T) {
	newEngine := func(ts float64) *Engine {
		b, err := breaker.New(breaker.Config{TimeScale: ts})
		if err != nil {
			t.Fatal(err)
		}
		return New(Config{
			Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 30 * time.Second},
			Scopes:    []ScopeConfig{{Fixed: 10, Breaker: b}},
			Retry:     RetryConfig{Budget: 1, Burst: 10},
			TimeScale: ts,
		})
	}
	sole := Request{Targets: []int{0}, Deadline: at(time.Minute)}
	refuse := Outcome{Kind: Overloaded, Status: 503, RetryAfter: 500 * time.Millisecond}
	for _, c := range []struct {
		scale  float64
		paused bool
	}{{1, false}, {0.25, true}} {
		e := newEngine(c.scale)
		a, _ := e.Arrive(at(0), sole)
		_, delay, ok := e.Retry(at(0), a.ID, refuse)
		if ok == c.paused {
			t.Errorf("scale %v: retry on the same provider %v (after %v), want %v", c.scale, ok, delay, !c.paused)
		}
		e.Finish(at(0), a.ID, refuse)
		if got := e.isPaused(at(100*time.Millisecond), 0); got != c.paused {
			t.Errorf("scale %v: paused %v, want %v", c.scale, got, c.paused)
		}
		if got, want := e.retryCfg.Base, time.Duration(float64(100*time.Millisecond)*c.scale); got != want {
			t.Errorf("scale %v: retry base %v, want %v", c.scale, got, want)
		}
		if got, want := newEngine(c.scale).untilAvailable(at(0), sole), time.Duration(float64(time.Second)*c.scale); got != want {
			t.Errorf("scale %v: no-target Retry-After floor %v, want %v", c.scale, got, want)
		}
	}
}
