package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// TestEngineTimeScale: the engine's own constants scale. A provider's
// 500 ms Retry-After is waited out at real time (under RetryAfterHold,
// so nothing is paused), but at a quarter it stands for 2 s of the
// scenario, which pauses the provider and is still waited out (under
// DefaultRetryWait); 1 s there stands for 4 s, past DefaultRetryWait,
// and is not. The retry backoff's base and the no-target Retry-After
// floor shrink with the scale.
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
	for _, c := range []struct {
		scale           float64
		after           time.Duration
		retried, paused bool
	}{{1, 500 * time.Millisecond, true, false}, {0.25, 500 * time.Millisecond, true, true}, {0.25, time.Second, false, true}} {
		refuse := Outcome{Kind: Overloaded, Status: 503, RetryAfter: c.after}
		e := newEngine(c.scale)
		a, _ := e.Arrive(at(0), sole)
		_, delay, ok := e.Retry(at(0), a.ID, refuse)
		if ok != c.retried {
			t.Errorf("scale %v, Retry-After %v: retry on the same provider %v (after %v), want %v", c.scale, c.after, ok, delay, c.retried)
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
