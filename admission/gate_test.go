package admission

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// All Gate tests run inside a synctest bubble and give NewGate a nil clock:
// time.Now and the Gate's timer then both run on the bubble's fake clock,
// so waits are exact and cost no real time.

type outcome struct {
	p       *Permit
	err     error
	elapsed time.Duration
}

// goAcquire starts Acquire on its own goroutine, as a request handler would.
func goAcquire(ctx context.Context, g *Gate, r Request) <-chan outcome {
	out := make(chan outcome, 1)
	go func() {
		start := time.Now()
		p, err := g.Acquire(ctx, r)
		out <- outcome{p, err, time.Since(start)}
	}()
	return out
}

func mustAcquire(t *testing.T, g *Gate, r Request) *Permit {
	t.Helper()
	p, err := g.Acquire(context.Background(), r)
	if err != nil {
		t.Fatalf("Acquire(%s) = %v", r.Priority, err)
	}
	return p
}

func wantRejection(t *testing.T, err error, why Reason, p Priority) *Rejection {
	t.Helper()
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("err = %v, want a rejection", err)
	}
	var rej *Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("err = %T %v, want *Rejection", err, err)
	}
	if rej.Reason != why || rej.Priority != p || rej.RetryAfter < time.Second {
		t.Fatalf("rejection %+v, want %s for %s with RetryAfter >= 1s", rej, why, p)
	}
	return rej
}

func wantState(t *testing.T, g *Gate, inFlight int, queued [numPriorities]int) {
	t.Helper()
	if s := g.Snapshot(); s.InFlight != inFlight || s.Queued != queued {
		t.Fatalf("gate in flight %d queued %v, want %d %v", s.InFlight, s.Queued, inFlight, queued)
	}
}

// wantIdle checks that nothing is held, nothing waits, and neither the
// Gate nor its Core still remembers any ticket: a leak there is invisible
// to Snapshot but grows without bound in a long-running gateway.
func wantIdle(t *testing.T, g *Gate) {
	t.Helper()
	wantState(t, g, 0, [3]int{})
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiters) != 0 || len(g.core.entries) != 0 || len(g.core.expiry) != 0 {
		t.Fatalf("idle gate remembers %d waiters, %d entries, %d expiries",
			len(g.waiters), len(g.core.entries), len(g.core.expiry))
	}
}

// atomicDial is dial for the Gate, whose Core reads the limit under the
// Gate's lock while the test moves it from outside.
type atomicDial struct{ n atomic.Int64 }

func (d *atomicDial) Limit() int { return int(d.n.Load()) }

func TestGateWaitTimeout(t *testing.T) {
	cases := []struct {
		name     string
		maxWait  time.Duration
		deadline time.Duration // zero: none
		p        Priority
		want     time.Duration
	}{
		{name: "refused exactly at MaxWait", maxWait: 3 * time.Second, p: Interactive, want: 3 * time.Second},
		{name: "background likewise", maxWait: 1500 * time.Millisecond, p: Background, want: 1500 * time.Millisecond},
		{name: "a shorter deadline wins", maxWait: 3 * time.Second, deadline: time.Second, p: Interactive, want: time.Second},
		{name: "MaxWait wins over a longer deadline", maxWait: 2 * time.Second, deadline: 5 * time.Second, p: Background, want: 2 * time.Second},
		{name: "critical waits until its own deadline", maxWait: time.Second, deadline: 7 * time.Second, p: Critical, want: 7 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGate(Config{Global: Fixed(1), MaxDepth: 4, MaxWait: tc.maxWait}, nil)
				hold := mustAcquire(t, g, inter)
				r := req(tc.p, NoScope)
				if tc.deadline != 0 {
					r.Deadline = time.Now().Add(tc.deadline)
				}
				start := time.Now()
				_, err := g.Acquire(context.Background(), r)
				if got := time.Since(start); got != tc.want {
					t.Errorf("refused after %v, want %v", got, tc.want)
				}
				wantRejection(t, err, ReasonWaitTimeout, tc.p)
				wantState(t, g, 1, [3]int{})
				hold.Release()
				wantIdle(t, g)
			})
		})
	}
}

func TestGateTimerFollowsEarliestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(Config{Global: Fixed(1), MaxDepth: 8, MaxWait: 10 * time.Second}, nil)
		hold := mustAcquire(t, g, inter)
		start := time.Now()
		long := goAcquire(context.Background(), g, inter)
		time.Sleep(time.Second)
		// Queued after long but due first: the timer must move earlier.
		short := goAcquire(context.Background(), g, Request{Priority: Background, Scope: NoScope,
			Deadline: time.Now().Add(2 * time.Second)})
		time.Sleep(time.Second)
		// Due before both, then gone: the timer must not strand the others.
		ctx, cancel := context.WithCancel(context.Background())
		gone := goAcquire(ctx, g, Request{Priority: Interactive, Scope: NoScope,
			Deadline: time.Now().Add(500 * time.Millisecond)})
		time.Sleep(100 * time.Millisecond)
		cancel()
		if o := <-gone; !errors.Is(o.err, context.Canceled) {
			t.Fatalf("cancelled waiter got %v", o.err)
		}

		o := <-short
		wantRejection(t, o.err, ReasonWaitTimeout, Background)
		if at := time.Since(start); at != 3*time.Second || o.elapsed != 2*time.Second {
			t.Errorf("short waiter refused at %v after %v, want 3s after 2s", at, o.elapsed)
		}
		o = <-long
		wantRejection(t, o.err, ReasonWaitTimeout, Interactive)
		if o.elapsed != 10*time.Second {
			t.Errorf("long waiter refused after %v, want 10s", o.elapsed)
		}
		hold.Release()
		wantIdle(t, g)
	})
}

func TestGateCancelWhileWaiting(t *testing.T) {
	cases := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		// cancelAfter, if set, cancels by hand; otherwise ctx times out.
		cancelAfter time.Duration
		want        error
		elapsed     time.Duration
	}{
		{
			name:        "cancel",
			ctx:         func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			cancelAfter: 700 * time.Millisecond,
			want:        context.Canceled,
			elapsed:     700 * time.Millisecond,
		},
		{
			name: "context deadline before MaxWait",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 400*time.Millisecond)
			},
			want:    context.DeadlineExceeded,
			elapsed: 400 * time.Millisecond,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGate(Config{Global: Fixed(1), MaxDepth: 1, MaxWait: 5 * time.Second}, nil)
				hold := mustAcquire(t, g, inter)
				ctx, cancel := tc.ctx()
				defer cancel()
				out := goAcquire(ctx, g, inter)
				synctest.Wait()
				wantState(t, g, 1, [3]int{0, 1, 0})
				if g.Check(inter) == nil {
					t.Fatal("Check found room in a full queue")
				}
				if tc.cancelAfter > 0 {
					time.Sleep(tc.cancelAfter)
					cancel()
				}
				o := <-out
				if o.p != nil || o.err != tc.want || o.elapsed != tc.elapsed {
					t.Fatalf("Acquire = %v, %v after %v; want nil, %v after %v", o.p, o.err, o.elapsed, tc.want, tc.elapsed)
				}
				// The place is free again, and the slot was not handed to
				// the waiter that left.
				wantState(t, g, 1, [3]int{})
				if rej := g.Check(inter); rej != nil {
					t.Fatalf("Check after the waiter left = %v", rej)
				}
				hold.Release()
				wantIdle(t, g)
			})
		})
	}
}

func TestPermitReleaseIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(Config{Global: Fixed(2), MaxDepth: 4, MaxWait: time.Minute}, nil)
		p1 := mustAcquire(t, g, inter)
		p2 := mustAcquire(t, g, inter)
		first := goAcquire(context.Background(), g, inter)
		synctest.Wait() // first must be queued ahead of second
		second := goAcquire(context.Background(), g, inter)
		synctest.Wait()
		wantState(t, g, 2, [3]int{0, 2, 0})

		var wg sync.WaitGroup
		for range 2 {
			wg.Go(p1.Release)
		}
		wg.Wait()
		p1.Release()
		// One slot came back, so exactly one waiter went in.
		synctest.Wait()
		wantState(t, g, 2, [3]int{0, 1, 0})
		o := <-first
		if o.err != nil {
			t.Fatalf("first waiter: %v", o.err)
		}
		select {
		case o := <-second:
			t.Fatalf("second waiter let in by a repeated Release: %+v", o)
		default:
		}
		o.p.Release()
		o2 := <-second
		o2.p.Release()
		o2.p.Release()
		p2.Release()
		wantIdle(t, g)
		var nilPermit *Permit
		nilPermit.Release() // a handler's deferred Release after a refusal
	})
}

func TestGateCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(Config{Global: Fixed(1), Reserved: 1, MaxDepth: 2, MaxWait: time.Minute}, nil)
		if rej := g.Check(inter); rej != nil {
			t.Fatalf("Check with room = %v", rej)
		}
		hold := mustAcquire(t, g, inter)
		if rej := g.Check(bg); rej != nil {
			t.Fatalf("Check with queue room = %v", rej)
		}
		out := goAcquire(context.Background(), g, inter)
		synctest.Wait()
		before := g.Snapshot()
		rej := g.Check(inter)
		if rej == nil {
			t.Fatal("Check with the queue full = nil")
		}
		wantRejection(t, rej, ReasonQueueFull, Interactive)
		if rej := g.Check(crit); rej != nil {
			t.Fatalf("Check(critical) = %v", rej)
		}
		if after := g.Snapshot(); fmt.Sprint(before) != fmt.Sprint(after) {
			t.Fatalf("Check changed state: %+v -> %+v", before, after)
		}
		hold.Release()
		o := <-out
		o.p.Release()
		wantIdle(t, g)
	})
}

func TestGateDisplacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(Config{Global: Fixed(1), MaxDepth: 2, MaxWait: time.Minute}, nil)
		hold := mustAcquire(t, g, inter)
		older := goAcquire(context.Background(), g, bg)
		synctest.Wait()
		newer := goAcquire(context.Background(), g, bg)
		synctest.Wait()
		time.Sleep(time.Second)
		in := goAcquire(context.Background(), g, inter)
		o := <-newer
		wantRejection(t, o.err, ReasonDisplaced, Background)
		if o.elapsed != time.Second {
			t.Errorf("displaced after %v, want at once when the newcomer arrived (1s)", o.elapsed)
		}
		synctest.Wait()
		wantState(t, g, 1, [3]int{0, 1, 1})
		hold.Release()
		oi := <-in
		if oi.err != nil {
			t.Fatal(oi.err)
		}
		oi.p.Release()
		ob := <-older
		if ob.err != nil || ob.p.Waited != time.Second {
			t.Fatalf("older background: %v, waited %v", ob.err, ob.p.Waited)
		}
		ob.p.Release()
		wantIdle(t, g)
	})
}

func TestGatePumpAfterLimitRises(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := &atomicDial{}
		lim.n.Store(1)
		g := NewGate(Config{Global: lim, MaxDepth: 4, MaxWait: time.Minute}, nil)
		hold := mustAcquire(t, g, inter)
		if hold.Waited != 0 {
			t.Errorf("admitted at once but Waited = %v", hold.Waited)
		}
		a := goAcquire(context.Background(), g, inter)
		b := goAcquire(context.Background(), g, bg)
		time.Sleep(1500 * time.Millisecond)
		lim.n.Store(3)
		g.Pump()
		for _, ch := range []<-chan outcome{a, b} {
			o := <-ch
			if o.err != nil || o.p.Waited != 1500*time.Millisecond {
				t.Fatalf("after Pump: %v, waited %v", o.err, o.p.Waited)
			}
			defer o.p.Release()
		}
		wantState(t, g, 3, [3]int{})
		hold.Release()
	})
}

func TestRejectionError(t *testing.T) {
	var err error = &Rejection{Reason: ReasonQueueFull, Priority: Background, RetryAfter: 3 * time.Second}
	wrapped := fmt.Errorf("proxy: %w", err)
	if !errors.Is(wrapped, ErrRejected) {
		t.Fatal("a wrapped Rejection does not match ErrRejected")
	}
	if errors.Is(context.Canceled, ErrRejected) {
		t.Fatal("context.Canceled matches ErrRejected")
	}
	if got := err.Error(); got != "admission: rejected background request: queue_full (retry after 3s)" {
		t.Fatalf("Error() = %q", got)
	}
}

// The cancel/grant race: the waiter's context ends at the same moment a
// Release grants it the slot. Whichever the waiter sees, the slot must
// not leak.
func TestGateCancelGrantRace(t *testing.T) {
	cases := []struct {
		name string
		// race makes the waiter's ctx end and the holder release at once.
		race func(cancel context.CancelFunc, hold *Permit)
		// raced reports whether the waiter was seen holding the slot it
		// had already given up on, the path the test is after.
		wantRaced bool
	}{
		{
			// cancel wakes the waiter's select on ctx.Done; Release then
			// grants it before it can run and Leave.
			name:      "cancel then release",
			race:      func(cancel context.CancelFunc, hold *Permit) { cancel(); hold.Release() },
			wantRaced: true,
		},
		{
			name: "release then cancel",
			race: func(cancel context.CancelFunc, hold *Permit) { hold.Release(); cancel() },
		},
		{
			name: "timers firing at the same fake instant",
			race: func(cancel context.CancelFunc, hold *Permit) {
				time.AfterFunc(time.Second, cancel)
				time.AfterFunc(time.Second, hold.Release)
				time.Sleep(time.Second)
				synctest.Wait() // both timer callbacks have run
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				raced, cancelled, granted := 0, 0, 0
				for range 200 {
					g := NewGate(Config{Global: Fixed(1), MaxDepth: 1, MaxWait: time.Minute}, nil)
					hold := mustAcquire(t, g, inter)
					ctx, cancel := context.WithCancel(context.Background())
					out := goAcquire(ctx, g, inter)
					synctest.Wait()
					tc.race(cancel, hold)
					held := g.Snapshot().InFlight == 1
					o := <-out
					switch {
					case o.err == nil:
						granted++
						o.p.Release()
					case errors.Is(o.err, context.Canceled):
						cancelled++
						if held {
							raced++
						}
					default:
						t.Fatalf("Acquire = %v", o.err)
					}
					wantIdle(t, g)
					cancel()
				}
				t.Logf("granted %d, cancelled %d, of which %d were granted after giving up", granted, cancelled, raced)
				if tc.wantRaced && raced == 0 {
					t.Error("the race never left a cancelled waiter holding a slot; the test lost its point")
				}
			})
		})
	}
}

// The storm checks exactly-once end to end: every Acquire ends in one of
// three ways, and when all is done nothing is held and nothing waits.
func TestGateStorm(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { storm(t, seed) })
		})
	}
}

func storm(t *testing.T, seed uint64) {
	const n, limit, reserved = 200, 8, 2
	g := NewGate(Config{
		Global: Fixed(limit), Scopes: []Limiter{Fixed(5), Fixed(3)}, Reserved: reserved,
		MaxDepth: 20, MaxWait: 150 * time.Millisecond, MaxQueued: [3]int{0, 0, 10},
	}, nil)
	var (
		granted, rejected, cancelled atomic.Int64
		holding, holdingNonCrit      atomic.Int64
		reasons                      sync.Map
		wg                           sync.WaitGroup
	)
	for i := range n {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		r := Request{Priority: Priority(rng.IntN(numPriorities)), Scope: rng.IntN(3) - 1}
		arrive := time.Duration(rng.IntN(400)) * time.Millisecond
		hold := time.Duration(rng.IntN(80)) * time.Millisecond
		deadline := time.Duration(rng.IntN(300)) * time.Millisecond
		useDeadline := rng.IntN(4) == 0
		cancelAfter := time.Duration(rng.IntN(200)) * time.Millisecond
		mode := rng.IntN(6) // 0: cancel by hand, 1: ctx timeout, else none
		doubleRelease := rng.IntN(3) == 0
		wg.Go(func() {
			time.Sleep(arrive)
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			switch mode {
			case 0:
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(cancelAfter, cancel)
			case 1:
				ctx, cancel = context.WithTimeout(ctx, cancelAfter)
			}
			defer cancel()
			if useDeadline {
				r.Deadline = time.Now().Add(deadline)
			}
			p, err := g.Acquire(ctx, r)
			switch {
			case err == nil:
				h := holding.Add(1)
				if h > limit+reserved {
					t.Errorf("%d permits held at once, limit %d + reserved %d", h, limit, reserved)
				}
				if r.Priority != Critical {
					if h := holdingNonCrit.Add(1); h > limit {
						t.Errorf("%d non-critical permits held at once, limit %d", h, limit)
					}
				}
				time.Sleep(hold)
				holding.Add(-1)
				if r.Priority != Critical {
					holdingNonCrit.Add(-1)
				}
				if doubleRelease {
					var rw sync.WaitGroup
					rw.Go(p.Release)
					rw.Go(p.Release)
					rw.Wait()
				} else {
					p.Release()
				}
				granted.Add(1)
			case errors.Is(err, ErrRejected):
				var rej *Rejection
				if !errors.As(err, &rej) {
					t.Errorf("rejection of type %T", err)
				}
				if r.Priority == Critical && rej.Reason != ReasonWaitTimeout {
					t.Errorf("critical request refused for %s", rej.Reason)
				}
				v, _ := reasons.LoadOrStore(rej.Reason, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
				rejected.Add(1)
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				cancelled.Add(1)
			default:
				t.Errorf("Acquire = %v", err)
			}
		})
	}
	wg.Wait()
	if s := g.Snapshot(); s.ScopeInFlight[0] != 0 || s.ScopeInFlight[1] != 0 {
		t.Errorf("after the storm: %+v", s)
	}
	wantIdle(t, g)
	if sum := granted.Load() + rejected.Load() + cancelled.Load(); sum != n {
		t.Errorf("granted %d + rejected %d + cancelled %d = %d, want %d",
			granted.Load(), rejected.Load(), cancelled.Load(), sum, n)
	}
	var why []string
	reasons.Range(func(k, v any) bool {
		why = append(why, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	t.Logf("granted %d, rejected %d %v, cancelled %d", granted.Load(), rejected.Load(), why, cancelled.Load())
	// Each outcome should occur, or the storm is not testing what it claims.
	if granted.Load() == 0 || rejected.Load() == 0 || cancelled.Load() == 0 {
		t.Error("the storm did not produce every kind of outcome")
	}
}
