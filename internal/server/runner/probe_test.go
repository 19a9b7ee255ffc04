package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
)

// The Runner sends synthetic probes on its own timer, through the host's
// prober, with a context that ends at the probe's deadline; users are
// refused until a probe passes.
func TestRunnerSendsSyntheticProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := breaker.New(breaker.Config{MinCalls: 2, Window: 4 * time.Second, SlowThreshold: time.Second,
			OpenFor: 5 * time.Second, OpenForMax: 5 * time.Second, Probes: 2, ProbeInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		r := NewRunner(lifecycle.Config{Admission: admission.Config{Global: admission.Fixed(10)},
			Scopes: []lifecycle.ScopeConfig{{Name: "p", Breaker: b, SyntheticProbes: true}}}, nil)
		defer r.Close()
		var probes atomic.Int32
		healthyAt := time.Now().Add(8 * time.Second)
		r.SetProber(func(ctx context.Context, scope int) lifecycle.Outcome {
			probes.Add(1)
			if _, ok := ctx.Deadline(); !ok || scope != 0 {
				t.Errorf("probe of scope %d without a deadline", scope)
			}
			if time.Now().Before(healthyAt) {
				<-ctx.Done() // still slow: the probe times out
				return lifecycle.Outcome{Kind: lifecycle.TimedOut}
			}
			time.Sleep(100 * time.Millisecond)
			return lifecycle.Outcome{Kind: lifecycle.OK}
		})
		// Two calls pass 1 s in flight: the breaker opens.
		q := lifecycle.Request{Targets: []int{0}}
		c1, c2 := mustAcquire(t, r, q), mustAcquire(t, r, q)
		time.Sleep(1100 * time.Millisecond)
		c1.Finish(lifecycle.Outcome{Kind: lifecycle.Cancelled})
		c2.Finish(lifecycle.Outcome{Kind: lifecycle.Cancelled})
		if _, err := r.Acquire(context.Background(), q); !errors.Is(err, admission.ErrRejected) {
			t.Fatalf("a user while the breaker is open: %v, want refused", err)
		}
		// Probing starts at 6.1 s with no traffic at all; the provider
		// is healthy from 8 s, so a probe sent after that passes.
		time.Sleep(6400 * time.Millisecond) // 7.5 s
		if _, err := r.Acquire(context.Background(), q); !errors.Is(err, admission.ErrRejected) {
			t.Fatalf("a user while probing: %v, want refused", err)
		}
		time.Sleep(2 * time.Second)
		c := mustAcquire(t, r, q)
		c.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		if n := probes.Load(); n < 5 {
			t.Errorf("%d probes sent; want one per 200 ms while the provider was slow", n)
		}
	})
}
