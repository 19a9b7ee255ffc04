package fleetstore

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// Leases in Redis follow the rule of fleet.Lease, which the simulator's
// in-memory store applies: the same holders asking at the same moments
// get the same answers. Steps are spaced well away from the ttl's end,
// since Redis keeps its own clock.
func TestLeaseAgreesWithCore(t *testing.T) {
	c := redistest.Conn(t)
	l := NewLeases(c, Options{Prefix: redistest.Prefix(t, c), Timeout: time.Second})
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	var core fleet.Lease
	start := time.Now()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range []struct {
		holder string
		at     time.Duration // after the first step
	}{
		{"a", 0}, {"b", 100 * time.Millisecond}, {"a", 200 * time.Millisecond}, // renewed until 500 ms
		{"b", 400 * time.Millisecond}, {"b", 650 * time.Millisecond}, {"a", 750 * time.Millisecond},
		{"b", 800 * time.Millisecond}, {"c", 1250 * time.Millisecond}, {"a", 1300 * time.Millisecond},
	} {
		time.Sleep(time.Until(start.Add(s.at)))
		if late := time.Since(start) - s.at; late > 40*time.Millisecond {
			t.Skipf("step %d ran %v late: too busy a machine to compare clocks", i, late)
		}
		got, err := l.Lease(ctx, "probe:p", s.holder, ttl)
		if err != nil {
			t.Fatal(err)
		}
		want := fleet.MayProbe(core.Acquire(s.holder, t0.Add(s.at), ttl), nil, false)
		if fleet.MayProbe(got, nil, false) != want {
			t.Fatalf("step %d: %s at %v: Redis %v, core %v", i, s.holder, s.at, got, want)
		}
	}
}
