package fleetstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// pinnedPair returns allot-mode budgets and per-decision budgets on the
// same keys, both of whose scripts run at *now.
func pinnedPair(t *testing.T, now *time.Time) (allot, plain *Budgets) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	allot = NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true, Allot: true})
	plain = NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true})
	allot.pin = func() time.Time { return *now }
	plain.pin = allot.pin
	t.Cleanup(allot.Close)
	t.Cleanup(plain.Close)
	return allot, plain
}

// settled waits until name holds no credit, owes nothing and has no
// refill in flight.
func settled(t *testing.T, b *Budgets, name string) {
	t.Helper()
	waitFor(t, 10*time.Second, "credit given back", func() bool {
		c, p, r := b.held(name)
		return c == [3]int64{} && p == [3]int64{} && !r
	})
}

// TestAllotFleet: three replicas in Allot mode take single requests from
// one budget as fast as they can for about 3 s of real time. Together
// they get the GCRA bound B + L·t/1min within 2%, and never above it.
func TestAllotFleet(t *testing.T) {
	const per, burst = 60_000, 600
	l := quota.Limits{quota.Requests: {PerMinute: per, Burst: burst}}
	c0 := redistest.Conn(t)
	prefix := redistest.Prefix(t, c0)
	var fleet []*Budgets
	var h trips
	for range 3 {
		c := redistest.Conn(t)
		c.AddHook(&h)
		b := NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true, Allot: true})
		defer b.Close()
		fleet = append(fleet, b)
	}
	var admitted, calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(fleet))
	start := time.Now()
	stop := start.Add(3 * time.Second)
	for _, b := range fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				v, _, err := b.Take(context.Background(), "shared", l, quota.Cost{Requests: 1})
				calls.Add(1)
				if err != nil {
					errs <- err
					return
				}
				if v.OK {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	bound := burst + per*elapsed.Seconds()/60
	got := float64(admitted.Load())
	t.Logf("admitted %v in %v; bound %.1f; %d takes, %.3f round trips each", got, elapsed, bound, calls.Load(), float64(h.n.Load())/float64(calls.Load()))
	if got > bound+1 {
		t.Fatalf("fleet admitted %v in %v, above the GCRA bound %.1f", got, elapsed, bound)
	}
	if got < 0.98*bound {
		t.Fatalf("fleet admitted %v in %v, under the bound %.1f by more than 2%%", got, elapsed, bound)
	}
}

// TestAllotRefusal: on a pinned clock, a replica in Allot mode admits
// exactly what quota.Budget admits once its credit is back, and its
// refusals are the script's: the same as a per-decision Check at the
// same instant, and as quota's.
func TestAllotRefusal(t *testing.T) {
	now := t0
	a, plain := pinnedPair(t, &now)
	l := quota.Limits{quota.Requests: {PerMinute: 600, Burst: 500}, quota.InputTokens: {PerMinute: 600_000, Burst: 300_000}}
	q, _ := quota.New(l)
	ctx := context.Background()
	cost := quota.Cost{Requests: 1, InputTokens: 800}
	admitted, local := 0, 0
	var trips trips
	a.rdb.AddHook(&trips)
	for {
		before := trips.n.Load()
		v, _, err := a.Take(ctx, "k", l, cost)
		if err != nil {
			t.Fatal(err)
		}
		if v.OK {
			admitted++
			if trips.n.Load() == before {
				local++
			}
			continue
		}
		if c, p, r := a.held("k"); c != [3]int64{} || p != [3]int64{} || r {
			// Refused with credit too small for the cost, credit on its
			// way back, or a refill in flight: wait for it to land or go
			// back, and go on. (Compared while credit was still going
			// back, Redis's check admitted what the replica had refused.)
			settled(t, a, "k")
			continue
		}
		// Nothing held or in flight: the refusal is Redis's whole state.
		w, _, err := plain.Check(ctx, "k", l, cost)
		if err != nil {
			t.Fatal(err)
		}
		if v != w {
			t.Fatalf("allot refusal %+v, per-decision check %+v", v, w)
		}
		break
	}
	for range admitted {
		if !q.Take(now, cost).OK {
			t.Fatal("quota refused within the count")
		}
	}
	want := q.Take(now, cost)
	v, _, _ := a.Take(ctx, "k", l, cost)
	t.Logf("admitted %d (%d from credit)", admitted, local)
	if want.OK || admitted != 300_000/800 {
		t.Fatalf("admitted %d, quota admits %d", admitted, 300_000/800)
	}
	sameVerdict(t, "refusal", v, want)
	if local == 0 {
		t.Fatal("no take was answered from credit")
	}
}

// TestAllotSettle: random takes, settles with more or less than
// reserved, refunds and charges through Allot mode, on a pinned clock;
// once the credit is back, the shared budget is exactly quota's after
// the same operations: what was used is charged, no more, no less.
func TestAllotSettle(t *testing.T) {
	now := t0
	a, plain := pinnedPair(t, &now)
	l := quota.Limits{{PerMinute: 100_000}, {PerMinute: 50_000_000, Burst: 20_000_000}, {PerMinute: 6_000_000}}
	q, _ := quota.New(l)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	var held []quota.Cost
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 5 || len(held) == 0:
			c := quota.Cost{Requests: 1, InputTokens: rng.Int64N(5000), OutputTokens: rng.Int64N(2000)}
			v, _, err := a.Take(ctx, "k", l, c)
			if err != nil || !v.OK {
				t.Fatalf("step %d: take %+v: %+v %v", step, c, v, err)
			}
			q.Take(now, c)
			held = append(held, c)
		case op < 8:
			i := rng.IntN(len(held))
			r := held[i]
			held = append(held[:i], held[i+1:]...)
			u := quota.Cost{Requests: 1, InputTokens: r.InputTokens, OutputTokens: rng.Int64N(3000)}
			if _, err := a.Settle(ctx, "k", l, r, u); err != nil {
				t.Fatal(err)
			}
			q.Settle(now, r, u)
		case op == 8:
			r := held[len(held)-1]
			held = held[:len(held)-1]
			if _, err := a.Refund(ctx, "k", l, r); err != nil {
				t.Fatal(err)
			}
			q.Refund(now, r)
		default:
			c := quota.Cost{OutputTokens: rng.Int64N(500)}
			if _, err := a.Charge(ctx, "k", l, c); err != nil {
				t.Fatal(err)
			}
			q.Charge(now, c)
		}
		if step%500 == 0 {
			time.Sleep(time.Millisecond) // let refills land now and then
		}
	}
	settled(t, a, "k")
	s, err := plain.Status(ctx, "k", l)
	if err != nil {
		t.Fatal(err)
	}
	sameStatus(t, "shared budget after the credit is back", s, q.Status(now))
	s, err = a.Status(ctx, "k", l)
	if err != nil {
		t.Fatal(err)
	}
	sameStatus(t, "allot status", s, q.Status(now))
}

// TestAllotStatus: Take's status counts the credit as this replica's:
// on a pinned clock it is the budget less what was admitted.
func TestAllotStatus(t *testing.T) {
	now := t0
	a, _ := pinnedPair(t, &now)
	l := quota.Limits{quota.Requests: {PerMinute: 6000}}
	ctx := context.Background()
	for i := range 200 {
		// A status answered while a refill is in flight may count its
		// chunk as spent or as held: wait for none.
		waitFor(t, 5*time.Second, "no refill in flight", func() bool { _, _, r := a.held("k"); return !r })
		v, s, err := a.Take(ctx, "k", l, quota.Cost{Requests: 1})
		if err != nil || !v.OK {
			t.Fatalf("take %d: %+v %v", i, v, err)
		}
		if s[0].Remaining != int64(6000-i-1) {
			t.Fatalf("take %d: remaining %d, want %d", i, s[0].Remaining, 6000-i-1)
		}
	}
}

// TestAllotIdleReturn: a replica that stops taking gives its credit back
// within a few idle periods.
func TestAllotIdleReturn(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	a := NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true, Allot: true})
	defer a.Close()
	plain := NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true})
	l := quota.Limits{quota.Requests: {PerMinute: 1, Burst: 1000}} // nothing comes back during the test
	ctx := context.Background()
	for i := 0; i < 60; i++ {
		if v, _, err := a.Take(ctx, "k", l, quota.Cost{Requests: 1}); err != nil || !v.OK {
			t.Fatalf("take %d: %+v %v", i, v, err)
		}
	}
	if cr, _, r := a.held("k"); cr[0] == 0 && !r {
		t.Fatal("no credit held or coming right after the takes")
	}
	start := time.Now()
	settled(t, a, "k")
	t.Logf("credit back %v after the last take", time.Since(start))
	s, err := plain.Status(ctx, "k", l)
	if err != nil {
		t.Fatal(err)
	}
	if r := s[0].Remaining; r < 940 || r > 941 {
		t.Fatalf("shared remaining %d after 60 takes and the credit back, want 940", r)
	}
}

// TestAllotFallback: with Redis gone, an Allot replica spends its credit,
// then falls back to local budgets; with Redis back, it switches back,
// pays what it took locally and gives its credit back, to the unit.
func TestAllotFallback(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	p := newProxy(t)
	rc := NewClient(p.addr())
	defer rc.Close()
	var m modes
	b := NewBudgets(rc, BudgetOptions{Prefix: prefix, Timeout: time.Second, HealthInterval: 20 * time.Millisecond, OnMode: m.on, Allot: true})
	defer b.Close()
	plain := NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true})
	l := quota.Limits{quota.Requests: {PerMinute: 1, Burst: 1000}} // nothing comes back during the test
	ctx := context.Background()
	took := 0
	take := func() {
		t.Helper()
		if v, _, err := b.Take(ctx, "k", l, quota.Cost{Requests: 1}); err != nil || !v.OK {
			t.Fatalf("take: %+v, %v", v, err)
		}
		took++
	}
	for range 30 {
		take()
	}
	waitFor(t, 5*time.Second, "credit held", func() bool {
		cr, _, r := b.held("k")
		return cr[0] > 0 && !r
	})
	p.setDown(true)
	for b.Mode() == Shared {
		if took > 200 {
			t.Fatal("still shared with Redis down after 200 takes")
		}
		take()
	}
	take()
	p.setDown(false)
	waitFor(t, 10*time.Second, "back to shared", func() bool { return b.Mode() == Shared })
	take()
	settled(t, b, "k")
	s, err := plain.Status(ctx, "k", l)
	if err != nil {
		t.Fatal(err)
	}
	if r := s[0].Remaining; r < int64(1000-took) || r > int64(1001-took) {
		t.Fatalf("shared remaining %d after %d takes, want %d: every take paid, every unit of credit given back", r, took, 1000-took)
	}
	if got := m.list(); len(got) != 2 || got[0] != Local || got[1] != Shared {
		t.Fatalf("OnMode calls %v, want [local shared]", got)
	}
}

// TestAllotClose: Close gives the credit back and leaves no goroutine
// behind.
func TestAllotClose(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	plain := NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true})
	before := runtime.NumGoroutine()
	rc := redistest.Conn(t)
	b := NewBudgets(rc, BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true, Allot: true, AllotIdle: time.Hour})
	l := quota.Limits{quota.Requests: {PerMinute: 1, Burst: 1000}, quota.OutputTokens: {PerMinute: 1, Burst: 1_000_000}}
	ctx := context.Background()
	for i := range 100 {
		r := quota.Cost{Requests: 1, OutputTokens: 1000}
		if v, _, err := b.Take(ctx, fmt.Sprint("k", i%3), l, r); err != nil || !v.OK {
			t.Fatalf("take: %+v %v", v, err)
		}
		if _, err := b.Refund(ctx, fmt.Sprint("k", i%3), l, r); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	for i := range 3 {
		s, err := plain.Status(ctx, fmt.Sprint("k", i), l)
		if err != nil {
			t.Fatal(err)
		}
		if s[0].Remaining != 1000 || s[2].Remaining != 1_000_000 {
			t.Fatalf("k%d after every take was refunded and Close: %+v, want full", i, s)
		}
	}
	rc.Close()
	waitFor(t, 5*time.Second, "goroutines back", func() bool { return runtime.NumGoroutine() <= before })
}
