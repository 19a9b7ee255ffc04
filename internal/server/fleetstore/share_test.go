package fleetstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// With Redis gone, a replica's budgets are package fleet's shares
// (fleet.Share, fleet.ShareVerdict): the same takes, after the same
// shared spending, get the same answers from Budgets in Local mode as
// from the core's share of an in-memory budget, as the simulator's
// replicas take them.
func TestLocalShareAgreesWithCore(t *testing.T) {
	c := redistest.Conn(t)
	// Rates of 1 a minute: nothing comes back while a case runs.
	reqs := quota.Limits{quota.Requests: {PerMinute: 1, Burst: 100}}
	toks := quota.Limits{quota.Requests: {PerMinute: 1, Burst: 100}, quota.OutputTokens: {PerMinute: 1, Burst: 3000}}
	for _, tc := range []struct {
		limits quota.Limits
		live   int
		spent  quota.Cost
		takes  []quota.Cost
	}{
		{reqs, 2, quota.Cost{Requests: 80}, []quota.Cost{{Requests: 11}, {Requests: 10}, {Requests: 1}}},
		{reqs, 3, quota.Cost{Requests: 1}, []quota.Cost{{Requests: 33}, {Requests: 1}}}, // ⌈1/3⌉ = 1 spent
		{reqs, 3, quota.Cost{}, []quota.Cost{{Requests: 33}, {Requests: 1}}},
		{reqs, 1, quota.Cost{Requests: 99}, []quota.Cost{{Requests: 1}, {Requests: 1}}},
		{reqs, 7, quota.Cost{Requests: 50}, []quota.Cost{{Requests: 7}, {Requests: 1}}},
		{toks, 3, quota.Cost{Requests: 3, OutputTokens: 301}, []quota.Cost{{Requests: 1, OutputTokens: 900}, {Requests: 1, OutputTokens: 2000}, {Requests: 1, OutputTokens: 3001}, {Requests: 1, OutputTokens: 1}}},
	} {
		t.Run(fmt.Sprintf("%d replicas, %d+%d spent", tc.live, tc.spent.Requests, tc.spent.OutputTokens), func(t *testing.T) {
			up := newProxy(t)
			rc := NewClient(up.addr())
			defer rc.Close()
			b := NewBudgets(rc, BudgetOptions{Prefix: redistest.Prefix(t, c), Timeout: 200 * time.Millisecond, HealthInterval: time.Hour, Replicas: func() int { return tc.live }})
			defer b.Close()
			ctx := context.Background()

			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			whole, _ := quota.New(tc.limits)
			if tc.spent != (quota.Cost{}) {
				if v, _, err := b.Take(ctx, "k", tc.limits, tc.spent); err != nil || !v.OK {
					t.Fatalf("shared take: %+v %v", v, err)
				}
				whole.Take(t0, tc.spent)
			} else if _, err := b.Status(ctx, "k", tc.limits); err != nil {
				t.Fatal(err)
			}
			share, err := fleet.Share(tc.limits, tc.live, whole.Status(t0), t0)
			if err != nil {
				t.Fatal(err)
			}
			up.setDown(true)
			for i, cost := range tc.takes {
				got, _, err := b.Take(ctx, "k", tc.limits, cost)
				if err != nil {
					t.Fatal(err)
				}
				want := fleet.ShareVerdict(share.Take(t0, cost), tc.limits, cost, time.Hour)
				if got.OK != want.OK || got.Never != want.Never || got.Dimension != want.Dimension ||
					(want.RetryAfter == time.Hour) != (got.RetryAfter == time.Hour) {
					t.Fatalf("take %d of %+v: store %+v, core %+v", i, cost, got, want)
				}
			}
			if b.Mode() != Local {
				t.Fatalf("mode %v, want local", b.Mode())
			}
		})
	}
}
