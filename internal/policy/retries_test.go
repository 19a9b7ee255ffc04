package policy

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

const runYAML = `
retries: {wait_max: 1500ms}
providers:
  - {name: a, kind: openai, base_url: "http://127.0.0.1:1/v1", breaker: {consecutive_errors: 3}}
  - {name: b, kind: openai, base_url: "http://127.0.0.1:2/v1", breaker: {consecutive_errors: -1}}
  - {name: c, kind: openai, base_url: "http://127.0.0.1:3/v1"}
models:
  - name: m
    targets: [{provider: a, model: x}, {provider: b, model: x}, {provider: c, model: x}]
`

// TestRunAndWaitMapped: breaker.consecutive_errors and retries.wait_max
// reach the engine: a trips on 3 errors in a row, b never does, c on
// the default 5; the Retry-After bound is the config's.
func TestRunAndWaitMapped(t *testing.T) {
	c, err := config.Parse([]byte(runYAML), "run.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lc, err := FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if lc.Retry.WaitMax != 1500*time.Millisecond {
		t.Errorf("wait_max %v, want 1.5s", lc.Retry.WaitMax)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, want := range []int{3, 0, breaker.DefaultConsecutiveErrors} {
		b := lc.Scopes[i].Breaker
		tripped := 0
		for n := 1; n <= 8 && tripped == 0; n++ {
			tk, err := b.Allow(now)
			if err != nil {
				t.Fatalf("provider %d: %v", i, err)
			}
			b.Done(now, tk, breaker.Outcome{Kind: breaker.Error, Latency: time.Millisecond})
			if s, _ := b.State(now); s == breaker.Open {
				tripped = n
			}
			now = now.Add(4 * time.Second)
		}
		if tripped != want {
			t.Errorf("provider %d tripped after %d errors, want %d", i, tripped, want)
		}
	}
}
