package fleetstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// pinned returns shared budgets whose scripts run at *now, not TIME.
func pinned(t *testing.T, now *time.Time) *Budgets {
	c := redistest.Conn(t)
	b := NewBudgets(c, BudgetOptions{Prefix: redistest.Prefix(t, c), Timeout: 5 * time.Second, NoFallback: true})
	b.pin = func() time.Time { return *now }
	t.Cleanup(b.Close)
	return b
}

// sameVerdict checks a shared verdict against quota's: the same, but
// RetryAfter rounded up to a microsecond.
func sameVerdict(t *testing.T, step string, got, want quota.Verdict) {
	t.Helper()
	w := want
	w.RetryAfter = 0
	g := got
	g.RetryAfter = 0
	if g != w || got.RetryAfter < want.RetryAfter || got.RetryAfter-want.RetryAfter >= time.Microsecond {
		t.Fatalf("%s: verdict %+v, quota says %+v", step, got, want)
	}
}

func sameStatus(t *testing.T, step string, got, want [3]quota.Status) {
	t.Helper()
	for d := range got {
		g, w := got[d], want[d]
		if g.Limit != w.Limit || g.Burst != w.Burst || g.Remaining != w.Remaining || g.Reset < w.Reset || g.Reset-w.Reset >= time.Microsecond {
			t.Fatalf("%s: %s status %+v, quota says %+v", step, quota.Dimension(d), g, w)
		}
	}
}

// TestMatchesQuota runs random sequences of every operation at the same
// instants (whole microseconds) through the shared budgets and through
// quota.Budget, and requires the same answers.
func TestMatchesQuota(t *testing.T) {
	sets := []quota.Limits{
		{{PerMinute: 7}, {PerMinute: 400_003, Burst: 12_345}, {PerMinute: 80_000}},
		{{PerMinute: 600}, {}, {PerMinute: 3, Burst: 5}},
		{{PerMinute: 1}, {PerMinute: 2_000_000}, {PerMinute: 999_999_937, Burst: 1_000_000_000_000}},
		{{PerMinute: 60_000_007, Burst: 1 << 40}, {PerMinute: 1 << 40}, {PerMinute: 13, Burst: 1}},
	}
	for i, l := range sets {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			now := t0
			b := pinned(t, &now)
			q, err := quota.New(l)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			ctx := context.Background()
			var burst [3]int64
			for d, x := range l {
				burst[d] = x.Burst
				if burst[d] == 0 {
					burst[d] = x.PerMinute
				}
			}
			amount := func(d int) int64 {
				switch k := rng.IntN(24); {
				case k < 2:
					return 0
				case k == 2:
					return burst[d] + 1 + rng.Int64N(3) // never fits
				case k < 5:
					return burst[d]
				default:
					return rng.Int64N(burst[d]/3 + 2)
				}
			}
			cost := func() quota.Cost {
				return quota.Cost{Requests: amount(0), InputTokens: amount(1), OutputTokens: amount(2)}
			}
			var held []quota.Cost
			var outcomes [3]int // passed, waited, never
			defer func() {
				t.Logf("takes: %d passed, %d told to wait, %d never", outcomes[0], outcomes[1], outcomes[2])
				if outcomes[0] == 0 || outcomes[1] == 0 || outcomes[2] == 0 {
					t.Errorf("the sequence missed an outcome: %v", outcomes)
				}
			}()
			for step := range 1000 {
				switch rng.IntN(5) {
				case 0:
				case 1:
					now = now.Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
				case 2:
					now = now.Add(time.Duration(rng.IntN(5_000_000)) * time.Microsecond)
				case 3:
					now = now.Add(time.Duration(rng.Int64N(int64(2*time.Minute/time.Microsecond))) * time.Microsecond)
				case 4:
					// to an instant near one emission interval of a dimension
					d := rng.IntN(3)
					if l[d].PerMinute > 0 {
						now = now.Add(time.Duration(60_000_000/l[d].PerMinute+rng.Int64N(3)) * time.Microsecond)
					}
				}
				name := fmt.Sprintf("step %d at +%v", step, now.Sub(t0))
				switch op := rng.IntN(10); {
				case op < 4: // take
					c := cost()
					v, s, err := b.Take(ctx, "k", l, c)
					if err != nil {
						t.Fatal(err)
					}
					want := q.Take(now, c)
					sameVerdict(t, name+" take", v, want)
					sameStatus(t, name+" take", s, q.Status(now))
					switch {
					case v.OK:
						held = append(held, c)
						outcomes[0]++
					case v.Never:
						outcomes[2]++
					default:
						outcomes[1]++
					}
				case op == 4:
					c := cost()
					v, s, err := b.Check(ctx, "k", l, c)
					if err != nil {
						t.Fatal(err)
					}
					sameVerdict(t, name+" check", v, q.Check(now, c))
					sameStatus(t, name+" check", s, q.Status(now))
				case op < 7 && len(held) > 0: // settle with more or less than reserved
					r := held[0]
					held = held[1:]
					a := quota.Cost{Requests: r.Requests, InputTokens: r.InputTokens * rng.Int64N(3) / 2, OutputTokens: rng.Int64N(r.OutputTokens + 2)}
					s, err := b.Settle(ctx, "k", l, r, a)
					if err != nil {
						t.Fatal(err)
					}
					q.Settle(now, r, a)
					sameStatus(t, name+" settle", s, q.Status(now))
				case op == 7 && len(held) > 0:
					r := held[len(held)-1]
					held = held[:len(held)-1]
					s, err := b.Refund(ctx, "k", l, r)
					if err != nil {
						t.Fatal(err)
					}
					q.Refund(now, r)
					sameStatus(t, name+" refund", s, q.Status(now))
				case op == 8:
					c := quota.Cost{OutputTokens: rng.Int64N(burst[2]/4 + 1)}
					s, err := b.Charge(ctx, "k", l, c)
					if err != nil {
						t.Fatal(err)
					}
					q.Charge(now, c)
					sameStatus(t, name+" charge", s, q.Status(now))
				default:
					s, err := b.Status(ctx, "k", l)
					if err != nil {
						t.Fatal(err)
					}
					sameStatus(t, name+" status", s, q.Status(now))
				}
			}
		})
	}
}

// TestSustainedRate: after a full burst, single units retried at each
// RetryAfter pass exactly one emission interval apart, with no drift, at
// a rate whose interval (60/7 s) is not a whole microsecond.
func TestSustainedRate(t *testing.T) {
	now := t0
	b := pinned(t, &now)
	l := quota.Limits{quota.Requests: {PerMinute: 7}}
	ctx := context.Background()
	one := quota.Cost{Requests: 1}
	passed := 0
	for passed < 7+64 {
		v, _, err := b.Take(ctx, "k", l, one)
		if err != nil {
			t.Fatal(err)
		}
		if v.OK {
			passed++
			continue
		}
		now = now.Add(v.RetryAfter)
	}
	// The 64th unit after the burst passes at 64·60/7 s, rounded up to a
	// microsecond, the roundings never accumulated.
	exact := time.Duration(64 * int64(time.Minute) / 7) // 548.571428571 s, floored
	if d := now.Sub(t0); d <= exact || d > exact+time.Microsecond {
		t.Fatalf("last unit passed at +%v, want +%v rounded up to a microsecond", d, exact)
	}
}

func TestAllOrNothing(t *testing.T) {
	now := t0
	b := pinned(t, &now)
	l := quota.Limits{quota.Requests: {PerMinute: 10}, quota.InputTokens: {PerMinute: 100}}
	ctx := context.Background()
	if v, _, _ := b.Take(ctx, "k", l, quota.Cost{Requests: 1, InputTokens: 100}); !v.OK {
		t.Fatalf("first take refused: %+v", v)
	}
	v, s, err := b.Take(ctx, "k", l, quota.Cost{Requests: 1, InputTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v.OK || v.Dimension != quota.InputTokens || v.RetryAfter != 600*time.Millisecond {
		t.Fatalf("second take: %+v, want refused by input_tokens for 600ms", v)
	}
	if s[quota.Requests].Remaining != 9 {
		t.Fatalf("requests remaining %d after a refused take, want 9: a refusal takes nothing", s[quota.Requests].Remaining)
	}
}

func TestNever(t *testing.T) {
	now := t0
	b := pinned(t, &now)
	l := quota.Limits{quota.Requests: {PerMinute: 10}, quota.OutputTokens: {PerMinute: 1000, Burst: 500}}
	v, s, err := b.Take(context.Background(), "k", l, quota.Cost{Requests: 1, OutputTokens: 501})
	if err != nil {
		t.Fatal(err)
	}
	if v.OK || !v.Never || v.Dimension != quota.OutputTokens || v.RetryAfter != 0 {
		t.Fatalf("take above the burst: %+v, want Never on output_tokens", v)
	}
	if s[quota.Requests].Remaining != 10 || s[quota.OutputTokens].Remaining != 500 {
		t.Fatalf("status after Never: %+v, want untouched", s)
	}
}

func TestDebt(t *testing.T) {
	now := t0
	b := pinned(t, &now)
	l := quota.Limits{quota.OutputTokens: {PerMinute: 600}}
	ctx := context.Background()
	res := quota.Cost{OutputTokens: 100}
	if v, _, _ := b.Take(ctx, "k", l, res); !v.OK {
		t.Fatal("reservation refused")
	}
	s, err := b.Settle(ctx, "k", l, res, quota.Cost{OutputTokens: 1000}) // 400 into debt
	if err != nil {
		t.Fatal(err)
	}
	if s[2].Remaining != 0 || s[2].Reset != 100*time.Second {
		t.Fatalf("in debt: %+v, want Remaining 0, Reset 100s", s[2])
	}
	v, _, _ := b.Take(ctx, "k", l, quota.Cost{})
	if v.OK || v.RetryAfter != 40*time.Second {
		t.Fatalf("zero cost in debt: %+v, want refused for 40s", v)
	}
	now = now.Add(40 * time.Second)
	if v, _, _ := b.Take(ctx, "k", l, quota.Cost{}); !v.OK {
		t.Fatalf("zero cost once the debt is paid: %+v", v)
	}
}

func TestRefundNotBeyondFull(t *testing.T) {
	now := t0
	b := pinned(t, &now)
	l := quota.Limits{quota.InputTokens: {PerMinute: 1000}}
	ctx := context.Background()
	c := quota.Cost{InputTokens: 1000}
	if v, _, _ := b.Take(ctx, "k", l, c); !v.OK {
		t.Fatal("take refused")
	}
	now = now.Add(30 * time.Second) // half back already
	s, err := b.Refund(ctx, "k", l, c)
	if err != nil {
		t.Fatal(err)
	}
	if s[1].Remaining != 1000 || s[1].Reset != 0 {
		t.Fatalf("after refund: %+v, want full (1000, reset 0)", s[1])
	}
	if v, _, _ := b.Take(ctx, "k", l, quota.Cost{InputTokens: 1001}); !v.Never {
		t.Fatalf("1001 after refund: %+v, want Never (nothing beyond full)", v)
	}
	if v, _, _ := b.Take(ctx, "k", l, c); !v.OK {
		t.Fatal("full burst after refund refused")
	}
	if v, _, _ := b.Take(ctx, "k", l, quota.Cost{InputTokens: 1}); v.OK {
		t.Fatal("refund went beyond full: a unit passed after a full burst")
	}
}

// TestExpiry: a budget's key lives until the budget would be full again
// (plus a second), and no longer.
func TestExpiry(t *testing.T) {
	c := redistest.Conn(t)
	b := NewBudgets(c, BudgetOptions{Prefix: redistest.Prefix(t, c), Timeout: 5 * time.Second, NoFallback: true})
	defer b.Close()
	ctx := context.Background()
	l := quota.Limits{quota.Requests: {PerMinute: 60}}
	if v, _, _ := b.Check(ctx, "k", l, quota.Cost{Requests: 1}); !v.OK {
		t.Fatal("check refused")
	}
	if n := c.Exists(ctx, b.Key("k")).Val(); n != 0 {
		t.Fatal("check wrote the budget")
	}
	if v, _, _ := b.Take(ctx, "k", l, quota.Cost{Requests: 30}); !v.OK {
		t.Fatal("take refused")
	}
	ttl := c.PTTL(ctx, b.Key("k")).Val()
	if ttl <= 30*time.Second || ttl > 31*time.Second {
		t.Fatalf("TTL %v after taking half a minute's worth, want 30-31s", ttl)
	}
}

// TestFleet: three replicas, each its own client and Budgets, take single
// requests from one budget as fast as they can for a few seconds of real
// time (Redis's clock). What they get together is the GCRA bound
// B + L·t/1min, and no less than that by more than a small slack.
func TestFleet(t *testing.T) {
	const per, burst = 6000, 100
	l := quota.Limits{quota.Requests: {PerMinute: per, Burst: burst}}
	c0 := redistest.Conn(t)
	prefix := redistest.Prefix(t, c0)
	var fleet []*Budgets
	for range 3 {
		b := NewBudgets(redistest.Conn(t), BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true})
		defer b.Close()
		fleet = append(fleet, b)
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(fleet))
	start := time.Now()
	stop := start.Add(2500 * time.Millisecond)
	for _, b := range fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				v, _, err := b.Take(context.Background(), "shared", l, quota.Cost{Requests: 1})
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
	t.Logf("admitted %v in %v; bound %.1f", got, elapsed, bound)
	if got > bound {
		t.Fatalf("fleet admitted %v in %v, above the GCRA bound %.1f", got, elapsed, bound)
	}
	if slack := 0.05*bound + 5; got < bound-slack {
		t.Fatalf("fleet admitted %v in %v, under the bound %.1f by more than %.1f", got, elapsed, bound, slack)
	}
}

func TestLimitsRefused(t *testing.T) {
	c := redistest.Conn(t)
	b := NewBudgets(c, BudgetOptions{Prefix: redistest.Prefix(t, c)})
	defer b.Close()
	_, _, err := b.Take(context.Background(), "k", quota.Limits{{PerMinute: 1 << 41}}, quota.Cost{Requests: 1})
	if !errors.Is(err, ErrLimits) {
		t.Fatalf("2^41 a minute: %v, want ErrLimits", err)
	}
	_, _, err = b.Take(context.Background(), "k", quota.Limits{{PerMinute: -1}}, quota.Cost{Requests: 1})
	if err == nil {
		t.Fatal("negative limit accepted")
	}
}
