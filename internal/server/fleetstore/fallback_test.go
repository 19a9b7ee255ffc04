package fleetstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// modes records OnMode's calls.
type modes struct {
	mu  sync.Mutex
	got []Mode
}

func (m *modes) on(x Mode, _ error) {
	m.mu.Lock()
	m.got = append(m.got, x)
	m.mu.Unlock()
}

func (m *modes) list() []Mode {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Mode(nil), m.got...)
}

// slack is what a busy machine (two cores, the race detector) may add to
// a call's Timeout.
const slack = 150 * time.Millisecond

// TestFallbackDeadAddress: with nothing listening, every call is answered
// at once from local budgets holding the replica's share of the limits.
func TestFallbackDeadAddress(t *testing.T) {
	var m modes
	b := NewBudgets(NewClient("127.0.0.1:1"), BudgetOptions{Replicas: func() int { return 2 }, OnMode: m.on})
	defer b.Close()
	l := quota.Limits{quota.Requests: {PerMinute: 10}}
	ctx := context.Background()
	for i := range 6 {
		start := time.Now()
		v, s, err := b.Take(ctx, "k", l, quota.Cost{Requests: 1})
		if took := time.Since(start); took > DefaultBudgetTimeout+slack {
			t.Fatalf("take %d took %v with Redis gone", i, took)
		}
		if err != nil {
			t.Fatalf("take %d: %v: a dead Redis must not fail a call", i, err)
		}
		if want := i < 5; v.OK != want {
			t.Fatalf("take %d: %+v; want OK=%v (half of 10 for each of 2 replicas)", i, v, want)
		}
		if i == 5 && (v.RetryAfter > 12*time.Second || v.RetryAfter < 11*time.Second || s[0].Limit != 5 || s[0].Remaining != 0) {
			t.Fatalf("sixth take: %+v %+v, want a wait of 12s at 5 a minute", v, s[0])
		}
	}
	if b.Mode() != Local {
		t.Fatalf("mode %v, want local", b.Mode())
	}
	if got := m.list(); len(got) != 1 || got[0] != Local {
		t.Fatalf("OnMode calls %v, want [local]", got)
	}
	// Beyond the replica's share of the burst but within the fleet's: a
	// wait, not Never, which would tell the client it can never pass.
	v, _, _ := b.Check(ctx, "k", l, quota.Cost{Requests: 8})
	if v.OK || v.Never || v.RetryAfter != time.Second {
		t.Fatalf("8 of a fleet burst of 10, locally: %+v, want a 1s wait", v)
	}
	if v, _, _ := b.Check(ctx, "k", l, quota.Cost{Requests: 11}); !v.Never {
		t.Fatalf("11 of a fleet burst of 10: %+v, want Never", v)
	}
	if _, err := b.Refund(ctx, "k", l, quota.Cost{Requests: 1}); err != nil {
		t.Fatal(err)
	}
	if s, _ := b.Status(ctx, "k", l); s[0].Remaining != 1 {
		t.Fatalf("after a local refund: %+v, want 1 remaining", s[0])
	}
}

// TestFallbackHang: a Redis that accepts and never answers costs each
// call no more than Timeout.
func TestFallbackHang(t *testing.T) {
	const timeout = 20 * time.Millisecond
	b := NewBudgets(NewClient(redistest.Silent(t)), BudgetOptions{Timeout: timeout})
	defer b.Close()
	l := quota.Limits{quota.Requests: {PerMinute: 10}}
	start := time.Now()
	v, _, err := b.Take(context.Background(), "k", l, quota.Cost{Requests: 1})
	if took := time.Since(start); took > timeout+slack {
		t.Fatalf("take took %v against a silent Redis, Timeout %v", took, timeout)
	}
	if err != nil || !v.OK || b.Mode() != Local {
		t.Fatalf("take: %+v, %v, mode %v; want answered locally", v, err, b.Mode())
	}
}

// TestFallbackRecovery: Redis goes away and comes back; the budgets go
// local and back to shared by themselves.
func TestFallbackRecovery(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	p := newProxy(t)
	rc := NewClient(p.addr())
	defer rc.Close()
	var m modes
	b := NewBudgets(rc, BudgetOptions{Prefix: prefix, Timeout: time.Second, HealthInterval: 20 * time.Millisecond, OnMode: m.on})
	defer b.Close()
	l := quota.Limits{quota.Requests: {PerMinute: 1, Burst: 100}} // nothing comes back during the test
	ctx := context.Background()
	take := func() {
		t.Helper()
		if v, _, err := b.Take(ctx, "k", l, quota.Cost{Requests: 1}); err != nil || !v.OK {
			t.Fatalf("take: %+v, %v", v, err)
		}
	}
	take()
	if b.Mode() != Shared {
		t.Fatal("not shared with Redis up")
	}
	p.setDown(true)
	take()
	if b.Mode() != Local {
		t.Fatal("still shared with Redis down")
	}
	p.setDown(false)
	waitFor(t, 10*time.Second, "back to shared", func() bool { return b.Mode() == Shared })
	take()
	s, err := b.Status(ctx, "k", l)
	if err != nil || s[0].Remaining != 97 {
		t.Fatalf("shared status after recovery: %+v, %v; want 97 remaining (the take made locally while Redis was away is paid back)", s[0], err)
	}
	if got := m.list(); len(got) != 2 || got[0] != Local || got[1] != Shared {
		t.Fatalf("OnMode calls %v, want [local shared]", got)
	}
}

// TestCallerGone: a caller whose context is done gets its error, and the
// budgets stay shared.
func TestCallerGone(t *testing.T) {
	c := redistest.Conn(t)
	b := NewBudgets(c, BudgetOptions{Prefix: redistest.Prefix(t, c)})
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := b.Take(ctx, "k", quota.Limits{{PerMinute: 1}}, quota.Cost{Requests: 1}); err == nil {
		t.Fatal("no error for a cancelled caller")
	}
	if b.Mode() != Shared {
		t.Fatal("a cancelled caller switched the budgets to local")
	}
}

// A budget that falls back to local starts from this replica's share of
// what the fleet had left, not from a fresh burst.
func TestFallbackStartsFromShared(t *testing.T) {
	c := redistest.Conn(t)
	up := newProxy(t)
	rc := NewClient(up.addr())
	defer rc.Close()
	b := NewBudgets(rc, BudgetOptions{Prefix: redistest.Prefix(t, c), Timeout: 200 * time.Millisecond, HealthInterval: time.Hour, Replicas: func() int { return 2 }})
	defer b.Close()
	ctx := context.Background()
	l := quota.Limits{quota.Requests: {PerMinute: 1, Burst: 100}} // nothing comes back during the test
	if v, _, err := b.Take(ctx, "k", l, quota.Cost{Requests: 80}); err != nil || !v.OK {
		t.Fatalf("shared take: %+v %v", v, err)
	}
	up.setDown(true)
	// The fleet had 20 left; this replica's share of that is 10.
	v, s, err := b.Take(ctx, "k", l, quota.Cost{Requests: 11})
	if err != nil || v.OK || b.Mode() != Local {
		t.Fatalf("local take of 11 with 10 left: %+v %+v %v (mode %v); want refused locally", v, s, err, b.Mode())
	}
	if v, _, _ := b.Take(ctx, "k", l, quota.Cost{Requests: 10}); !v.OK {
		t.Fatalf("local take of the 10 left: %+v", v)
	}
}
