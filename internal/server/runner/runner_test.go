package runner

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

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/limit"
)

// All Runner tests run inside a synctest bubble and give NewRunner a nil
// clock: time.Now and the Runner's timer then both run on the bubble's
// fake clock, so waits are exact and cost no real time. Each bubble ends
// with Close, since a pending timer would otherwise keep the bubble
// alive.

type outcome struct {
	c       *Call
	err     error
	elapsed time.Duration
}

// goAcquire starts Acquire on its own goroutine, as a request handler would.
func goAcquire(ctx context.Context, r *Runner, q lifecycle.Request) <-chan outcome {
	out := make(chan outcome, 1)
	go func() {
		start := time.Now()
		c, err := r.Acquire(ctx, q)
		out <- outcome{c, err, time.Since(start)}
	}()
	return out
}

func mustAcquire(t *testing.T, r *Runner, q lifecycle.Request) *Call {
	t.Helper()
	c, err := r.Acquire(context.Background(), q)
	if err != nil {
		t.Fatalf("Acquire(%s) = %v", q.Priority, err)
	}
	return c
}

func wantRejection(t *testing.T, err error, why admission.Reason, p admission.Priority) *admission.Rejection {
	t.Helper()
	if !errors.Is(err, admission.ErrRejected) {
		t.Fatalf("err = %v, want a rejection", err)
	}
	var rej *admission.Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("err = %T %v, want *admission.Rejection", err, err)
	}
	if rej.Reason != why || rej.Priority != p || rej.RetryAfter < admission.MinRetryAfter {
		t.Fatalf("rejection %+v, want %s for %s with RetryAfter >= %v", rej, why, p, admission.MinRetryAfter)
	}
	return rej
}

func wantState(t *testing.T, r *Runner, inFlight int, queued [3]int) {
	t.Helper()
	if s := r.Snapshot(); s.InFlight != inFlight || s.Queued != queued {
		t.Fatalf("runner in flight %d queued %v, want %d %v", s.InFlight, s.Queued, inFlight, queued)
	}
}

// wantIdle checks that nothing is held, nothing waits, and neither the
// Runner nor its Engine still remembers any request or timer: a leak
// there is invisible to Snapshot but grows without bound in a
// long-running gateway.
func wantIdle(t *testing.T, r *Runner) {
	t.Helper()
	wantState(t, r, 0, [3]int{})
	r.mu.Lock()
	defer r.mu.Unlock()
	// The tests' scopes have no breaker or pool, so any timer left is a
	// request's (queue expiry, slow flag, deadline) or a window's.
	next, timer := r.e.NextTimer()
	if len(r.waiters) != 0 || len(r.calls) != 0 || r.e.Requests() != 0 || timer {
		t.Fatalf("idle runner remembers %d waiters, %d calls, %d requests, timer %v at %v",
			len(r.waiters), len(r.calls), r.e.Requests(), timer, next)
	}
}

// global is a Runner config bound only by admission's global limit.
func global(ac admission.Config) lifecycle.Config { return lifecycle.Config{Admission: ac} }

// heard reads what a limit owned by r has heard, under r's lock, where
// the engine feeds it.
func heard(r *Runner, f *fakeLimit) []limit.Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]limit.Sample(nil), f.samples...)
}

func TestRunnerWaitTimeout(t *testing.T) {
	cases := []struct {
		name     string
		maxWait  time.Duration
		deadline time.Duration // zero: none
		p        admission.Priority
		want     time.Duration
	}{
		{name: "refused exactly at MaxWait", maxWait: 3 * time.Second, p: admission.Interactive, want: 3 * time.Second},
		{name: "background likewise", maxWait: 1500 * time.Millisecond, p: admission.Background, want: 1500 * time.Millisecond},
		{name: "a shorter deadline wins", maxWait: 3 * time.Second, deadline: time.Second, p: admission.Interactive, want: time.Second},
		{name: "MaxWait wins over a longer deadline", maxWait: 2 * time.Second, deadline: 5 * time.Second, p: admission.Background, want: 2 * time.Second},
		{name: "critical waits MaxWait too", maxWait: time.Second, deadline: 7 * time.Second, p: admission.Critical, want: time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := NewRunner(global(admission.Config{Global: admission.Fixed(1), MaxDepth: 4, MaxWait: tc.maxWait}), nil)
				defer r.Close()
				hold := mustAcquire(t, r, inter)
				q := req(tc.p, admission.NoScope)
				if tc.deadline != 0 {
					q.Deadline = time.Now().Add(tc.deadline)
				}
				start := time.Now()
				_, err := r.Acquire(context.Background(), q)
				if got := time.Since(start); got != tc.want {
					t.Errorf("refused after %v, want %v", got, tc.want)
				}
				why := admission.ReasonWaitTimeout
				if tc.deadline != 0 && tc.deadline <= tc.maxWait {
					why = admission.ReasonDeadline
				}
				wantRejection(t, err, why, tc.p)
				wantState(t, r, 1, [3]int{})
				hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
				wantIdle(t, r)
			})
		})
	}
}

func TestRunnerTimerFollowsEarliestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRunner(global(admission.Config{Global: admission.Fixed(1), MaxDepth: 8, MaxWait: 10 * time.Second}), nil)
		defer r.Close()
		hold := mustAcquire(t, r, inter)
		start := time.Now()
		long := goAcquire(context.Background(), r, inter)
		time.Sleep(time.Second)
		// Queued after long but due first: the timer must move earlier.
		short := goAcquire(context.Background(), r, lifecycle.Request{Priority: admission.Background, Scope: admission.NoScope,
			Deadline: time.Now().Add(2 * time.Second)})
		time.Sleep(time.Second)
		// Due before both, then gone: the timer must not strand the others.
		ctx, cancel := context.WithCancel(context.Background())
		gone := goAcquire(ctx, r, lifecycle.Request{Priority: admission.Interactive, Scope: admission.NoScope,
			Deadline: time.Now().Add(500 * time.Millisecond)})
		time.Sleep(100 * time.Millisecond)
		cancel()
		if o := <-gone; !errors.Is(o.err, context.Canceled) {
			t.Fatalf("cancelled waiter got %v", o.err)
		}

		o := <-short
		wantRejection(t, o.err, admission.ReasonDeadline, admission.Background)
		if at := time.Since(start); at != 3*time.Second || o.elapsed != 2*time.Second {
			t.Errorf("short waiter refused at %v after %v, want 3s after 2s", at, o.elapsed)
		}
		o = <-long
		wantRejection(t, o.err, admission.ReasonWaitTimeout, admission.Interactive)
		if o.elapsed != 10*time.Second {
			t.Errorf("long waiter refused after %v, want 10s", o.elapsed)
		}
		hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		wantIdle(t, r)
	})
}

func TestRunnerCancelWhileWaiting(t *testing.T) {
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
				r := NewRunner(global(admission.Config{Global: admission.Fixed(1), MaxDepth: 1, MaxWait: 5 * time.Second}), nil)
				defer r.Close()
				hold := mustAcquire(t, r, inter)
				ctx, cancel := tc.ctx()
				defer cancel()
				out := goAcquire(ctx, r, inter)
				synctest.Wait()
				wantState(t, r, 1, [3]int{0, 1, 0})
				if r.Check(inter) == nil {
					t.Fatal("Check found room in a full queue")
				}
				if tc.cancelAfter > 0 {
					time.Sleep(tc.cancelAfter)
					cancel()
				}
				o := <-out
				if o.c != nil || o.err != tc.want || o.elapsed != tc.elapsed {
					t.Fatalf("Acquire = %v, %v after %v; want nil, %v after %v", o.c, o.err, o.elapsed, tc.want, tc.elapsed)
				}
				// The place is free again, and the slot was not handed to
				// the waiter that left.
				wantState(t, r, 1, [3]int{})
				if rej := r.Check(inter); rej != nil {
					t.Fatalf("Check after the waiter left = %v", rej)
				}
				hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
				wantIdle(t, r)
			})
		})
	}
}

func TestCallFinishIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeLimit{limit: 2}
		r := NewRunner(oneScope(f, lifecycle.Total, 0, admission.Config{MaxDepth: 4, MaxWait: time.Minute}), nil)
		defer r.Close()
		q := req(admission.Interactive, 0)
		c1 := mustAcquire(t, r, q)
		c2 := mustAcquire(t, r, q)
		first := goAcquire(context.Background(), r, q)
		synctest.Wait() // first must be queued ahead of second
		second := goAcquire(context.Background(), r, q)
		synctest.Wait()
		wantState(t, r, 2, [3]int{0, 2, 0})

		time.Sleep(time.Second)
		var wg sync.WaitGroup
		for _, k := range []lifecycle.OutcomeKind{lifecycle.OK, lifecycle.Overloaded} {
			wg.Go(func() { c1.Finish(lifecycle.Outcome{Kind: k}) })
		}
		wg.Wait()
		c1.Finish(lifecycle.Outcome{Kind: lifecycle.ConnError})
		// One slot came back, so exactly one waiter went in, and the
		// limit heard one outcome.
		synctest.Wait()
		wantState(t, r, 2, [3]int{0, 1, 0})
		if s := heard(r, f); len(s) != 1 {
			t.Fatalf("limit heard %d samples from one call: %+v", len(s), s)
		}
		if err := context.Cause(c1.Context()); err != context.Canceled {
			t.Fatalf("finished call's context: cause %v, want context.Canceled", err)
		}
		c1.FirstByte() // a late report from a relay goroutine
		o := <-first
		if o.err != nil {
			t.Fatalf("first waiter: %v", o.err)
		}
		select {
		case o := <-second:
			t.Fatalf("second waiter let in by a repeated Finish: %+v", o)
		default:
		}
		o.c.Finish(lifecycle.Outcome{Kind: lifecycle.Cancelled})
		o2 := <-second
		o2.c.Finish(lifecycle.Outcome{Kind: lifecycle.Cancelled})
		o2.c.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		c2.Finish(lifecycle.Outcome{Kind: lifecycle.Failed})
		if s := heard(r, f); len(s) != 1 {
			t.Fatalf("limit heard %d samples, want 1: %+v", len(s), s)
		}
		wantIdle(t, r)
	})
}

func TestRunnerCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRunner(global(admission.Config{Global: admission.Fixed(1), Reserved: 1, MaxDepth: 2, MaxWait: time.Minute}), nil)
		defer r.Close()
		if rej := r.Check(inter); rej != nil {
			t.Fatalf("Check with room = %v", rej)
		}
		hold := mustAcquire(t, r, inter)
		if rej := r.Check(bg); rej != nil {
			t.Fatalf("Check with queue room = %v", rej)
		}
		out := goAcquire(context.Background(), r, inter)
		synctest.Wait()
		before := r.Snapshot()
		rej := r.Check(inter)
		if rej == nil {
			t.Fatal("Check with the queue full = nil")
		}
		wantRejection(t, rej, admission.ReasonQueueFull, admission.Interactive)
		if rej := r.Check(crit); rej != nil {
			t.Fatalf("Check(critical) = %v", rej)
		}
		if after := r.Snapshot(); fmt.Sprint(before) != fmt.Sprint(after) {
			t.Fatalf("Check changed state: %+v -> %+v", before, after)
		}
		hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		o := <-out
		o.c.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		wantIdle(t, r)
	})
}

func TestRunnerDisplacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRunner(global(admission.Config{Global: admission.Fixed(1), MaxDepth: 2, MaxWait: time.Minute}), nil)
		defer r.Close()
		hold := mustAcquire(t, r, inter)
		older := goAcquire(context.Background(), r, bg)
		synctest.Wait()
		newer := goAcquire(context.Background(), r, bg)
		synctest.Wait()
		time.Sleep(time.Second)
		in := goAcquire(context.Background(), r, inter)
		o := <-newer
		wantRejection(t, o.err, admission.ReasonDisplaced, admission.Background)
		if o.elapsed != time.Second {
			t.Errorf("displaced after %v, want at once when the newcomer arrived (1s)", o.elapsed)
		}
		synctest.Wait()
		wantState(t, r, 1, [3]int{0, 1, 1})
		hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		oi := <-in
		if oi.err != nil {
			t.Fatal(oi.err)
		}
		oi.c.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		ob := <-older
		if ob.err != nil || ob.c.Waited != time.Second {
			t.Fatalf("older background: %v, waited %v", ob.err, ob.c.Waited)
		}
		ob.c.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		wantIdle(t, r)
	})
}

func TestRunnerLimitRises(t *testing.T) {
	t.Run("on a sample", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeLimit{limit: 1, rise: 3}
			r := NewRunner(oneScope(f, lifecycle.Total, 0, admission.Config{MaxDepth: 4, MaxWait: time.Minute}), nil)
			defer r.Close()
			hold := mustAcquire(t, r, req(admission.Interactive, 0))
			if hold.Waited != 0 {
				t.Errorf("admitted at once but Waited = %v", hold.Waited)
			}
			a := goAcquire(context.Background(), r, req(admission.Interactive, 0))
			b := goAcquire(context.Background(), r, req(admission.Background, 0))
			time.Sleep(1500 * time.Millisecond)
			hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
			for _, ch := range []<-chan outcome{a, b} {
				o := <-ch
				if o.err != nil || o.c.Waited != 1500*time.Millisecond {
					t.Fatalf("after the limit rose: %v, waited %v", o.err, o.c.Waited)
				}
				defer o.c.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
			}
			wantState(t, r, 2, [3]int{})
		})
	})

	t.Run("on a window closing, with no traffic", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Windows end a second apart; the limit stays at 1 for two,
			// then rises to 2. The Runner arms only the engine's
			// NextTimer, which holds each window's end.
			start := time.Now()
			ends := []time.Time{start.Add(time.Second), start.Add(2 * time.Second), start.Add(3 * time.Second), start.Add(4 * time.Second)}
			w := &windowLimit{fakeLimit: fakeLimit{limit: 1}, steps: []int{1, 1, 2}, ends: ends}
			r := NewRunner(oneScope(w, lifecycle.Total, 0, admission.Config{MaxDepth: 4, MaxWait: time.Minute}), nil)
			hold := mustAcquire(t, r, req(admission.Interactive, 0))
			o := <-goAcquire(context.Background(), r, req(admission.Interactive, 0))
			if o.err != nil || o.elapsed != 3*time.Second {
				t.Fatalf("waiter: %v after %v, want in at the third window's end (3s)", o.err, o.elapsed)
			}
			time.Sleep(time.Second / 2)
			r.Close()
			// Closed: the timer stops, so the fourth window's end passes
			// unticked and the bubble can end.
			time.Sleep(10 * time.Second)
			r.mu.Lock()
			ticks := append([]time.Time(nil), w.ticks...)
			r.mu.Unlock()
			if len(ticks) != 3 || !ticks[2].Equal(ends[2]) {
				t.Fatalf("limit ticked at %v, want at the first three window ends, none after Close", ticks)
			}
			hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
			o.c.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
			r.mu.Lock()
			w.ends = nil // the fourth window, never ticked, is not a leak
			r.mu.Unlock()
			wantIdle(t, r)
		})
	})
}

func TestRunnerSlowAndFirstByte(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeLimit{limit: 4}
		r := NewRunner(oneScope(f, lifecycle.Auto, 2*time.Second, admission.Config{}), nil)
		defer r.Close()
		start := time.Now()
		stream := lifecycle.Request{Priority: admission.Interactive, Scope: 0, Stream: true}
		fast := mustAcquire(t, r, stream)
		slow := mustAcquire(t, r, stream)
		time.Sleep(time.Second)
		fast.FirstByte()
		fast.FirstByte() // only the first counts
		time.Sleep(time.Second)
		synctest.Wait()
		if s := heard(r, f); len(s) != 0 {
			t.Fatalf("at the threshold the limit heard %+v", s)
		}
		// The Runner's timer fires just past the threshold, on its own.
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		flag := limit.Sample{Now: start.Add(2*time.Second + time.Nanosecond), Dropped: true, InFlight: 2}
		if s := heard(r, f); len(s) != 1 || s[0] != flag {
			t.Fatalf("just past the threshold the limit heard %+v, want %+v", s, flag)
		}
		time.Sleep(time.Second)
		slow.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		fast.Finish(lifecycle.Outcome{Kind: lifecycle.OK, OutputTokens: 20})
		// Both end at one instant: the sample carries the count from
		// before either left.
		want := []limit.Sample{flag, {Now: start.Add(3*time.Second + time.Nanosecond), Latency: time.Second, InFlight: 2}}
		if s := heard(r, f); fmt.Sprint(s) != fmt.Sprint(want) {
			t.Fatalf("limit heard %+v, want %+v", s, want)
		}
		wantIdle(t, r)
	})
}

func TestRunnerExpire(t *testing.T) {
	t.Run("a call in flight at its deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeLimit{limit: 1}
			r := NewRunner(oneScope(f, lifecycle.Total, 0, admission.Config{MaxDepth: 2, MaxWait: time.Minute}), nil)
			defer r.Close()
			start := time.Now()
			c := mustAcquire(t, r, lifecycle.Request{Priority: admission.Interactive, Scope: 0, Deadline: start.Add(2 * time.Second)})
			<-c.Context().Done()
			if at := time.Since(start); at != 2*time.Second {
				t.Errorf("call context done after %v, want 2s", at)
			}
			if err := context.Cause(c.Context()); err != ErrDeadline {
				t.Fatalf("cause %v, want ErrDeadline", err)
			}
			// Expired is not finished: the slot is held until the host
			// says how the call ended.
			wantState(t, r, 1, [3]int{})
			c.Finish(lifecycle.Outcome{Kind: lifecycle.TimedOut})
			if s := heard(r, f); len(s) != 1 || !s[0].Dropped {
				t.Fatalf("limit heard %+v, want one drop", s)
			}
			wantIdle(t, r)
		})
	})

	t.Run("a call started from the queue", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := NewRunner(global(admission.Config{Global: admission.Fixed(1), MaxDepth: 2, MaxWait: time.Minute}), nil)
			defer r.Close()
			start := time.Now()
			hold := mustAcquire(t, r, inter)
			out := goAcquire(context.Background(), r, lifecycle.Request{Priority: admission.Interactive, Scope: admission.NoScope, Deadline: start.Add(5 * time.Second)})
			time.Sleep(time.Second)
			hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
			o := <-out
			if o.err != nil {
				t.Fatal(o.err)
			}
			<-o.c.Context().Done()
			if at := time.Since(start); at != 5*time.Second || context.Cause(o.c.Context()) != ErrDeadline {
				t.Errorf("call context done at %v with %v, want 5s and ErrDeadline", at, context.Cause(o.c.Context()))
			}
			o.c.Finish(lifecycle.Outcome{Kind: lifecycle.TimedOut})
			wantIdle(t, r)
		})
	})

	t.Run("a call that ends first is not expired", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := NewRunner(global(admission.Config{}), nil)
			defer r.Close()
			c := mustAcquire(t, r, lifecycle.Request{Priority: admission.Interactive, Scope: admission.NoScope, Deadline: time.Now().Add(2 * time.Second)})
			time.Sleep(time.Second)
			c.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
			time.Sleep(time.Minute)
			if err := context.Cause(c.Context()); err != context.Canceled {
				t.Fatalf("cause %v, want context.Canceled", err)
			}
			wantIdle(t, r)
		})
	})

	t.Run("the caller's context still rules the call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := NewRunner(global(admission.Config{}), nil)
			defer r.Close()
			gone := errors.New("client went away")
			ctx, cancel := context.WithCancelCause(context.Background())
			c, err := r.Acquire(ctx, lifecycle.Request{Priority: admission.Interactive, Scope: admission.NoScope, Deadline: time.Now().Add(time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			cancel(gone)
			if err := context.Cause(c.Context()); err != gone {
				t.Fatalf("cause %v, want the caller's", err)
			}
			c.Finish(lifecycle.Outcome{Kind: lifecycle.Cancelled})
			wantIdle(t, r)
		})
	})
}

// A request the engine starts while its waiter's goroutine has yet to
// wake can be expired before that goroutine takes the lock. The Expire
// must still reach the call's context. Two of the Runner's timer firings
// under one hold of the lock pin that schedule: the first closes a window
// and starts the waiter, the second is the waiter's deadline.
func TestRunnerExpireBeforeWaiterWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &windowLimit{fakeLimit: fakeLimit{limit: 1}, steps: []int{2}}
		r := NewRunner(oneScope(w, lifecycle.Total, 0, admission.Config{MaxDepth: 2, MaxWait: time.Minute}), nil)
		defer r.Close()
		start := time.Now()
		deadline := start.Add(500 * time.Millisecond)
		hold := mustAcquire(t, r, req(admission.Interactive, 0))
		out := goAcquire(context.Background(), r, lifecycle.Request{Priority: admission.Interactive, Scope: 0, Deadline: deadline})
		synctest.Wait()

		r.mu.Lock()
		rd := r.e.Tick(start)
		if len(rd.Start) != 1 {
			r.mu.Unlock()
			t.Fatalf("the window closing started %v, want the waiter", rd.Start)
		}
		r.applyLocked(start, rd)
		r.applyLocked(deadline, r.e.Tick(deadline))
		r.mu.Unlock()

		o := <-out
		if o.err != nil {
			t.Fatal(o.err)
		}
		if err := context.Cause(o.c.Context()); err != ErrDeadline {
			t.Fatalf("a call expired before its waiter woke: context cause %v, want ErrDeadline", err)
		}
		o.c.Finish(lifecycle.Outcome{Kind: lifecycle.TimedOut})
		hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
		wantIdle(t, r)
	})
}

// The cancel/grant race: the waiter's context ends at the same moment a
// Finish starts its call. Whichever the waiter sees, the slot must not
// leak.
func TestRunnerCancelGrantRace(t *testing.T) {
	cases := []struct {
		name string
		// race makes the waiter's ctx end and the holder finish at once.
		race func(cancel context.CancelFunc, hold *Call)
		// wantRaced: the waiter must at least once be seen holding the
		// slot it had already given up on, the path the test is after.
		wantRaced bool
	}{
		{
			// cancel wakes the waiter's select on ctx.Done; Finish then
			// starts it before it can run and Leave.
			name: "cancel then finish",
			race: func(cancel context.CancelFunc, hold *Call) {
				cancel()
				hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
			},
			wantRaced: true,
		},
		{
			name: "finish then cancel",
			race: func(cancel context.CancelFunc, hold *Call) {
				hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
				cancel()
			},
		},
		{
			name: "timers firing at the same fake instant",
			race: func(cancel context.CancelFunc, hold *Call) {
				time.AfterFunc(time.Second, cancel)
				time.AfterFunc(time.Second, func() { hold.Finish(lifecycle.Outcome{Kind: lifecycle.OK}) })
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
					r := NewRunner(global(admission.Config{Global: admission.Fixed(1), MaxDepth: 1, MaxWait: time.Minute}), nil)
					hold := mustAcquire(t, r, inter)
					ctx, cancel := context.WithCancel(context.Background())
					out := goAcquire(ctx, r, inter)
					synctest.Wait()
					tc.race(cancel, hold)
					held := r.Snapshot().InFlight == 1
					o := <-out
					switch {
					case o.err == nil:
						granted++
						o.c.Finish(lifecycle.Outcome{Kind: lifecycle.OK})
					case errors.Is(o.err, context.Canceled):
						cancelled++
						if held {
							raced++
						}
					default:
						t.Fatalf("Acquire = %v", o.err)
					}
					wantIdle(t, r)
					cancel()
					r.Close()
				}
				t.Logf("granted %d, cancelled %d, of which %d were started after giving up", granted, cancelled, raced)
				if tc.wantRaced && raced == 0 {
					t.Error("the race never left a cancelled waiter holding a slot; the test lost its point")
				}
			})
		})
	}
}

// The storm checks exactly-once end to end: every Acquire ends in one of
// three ways, every call ends by its deadline, and when all is done
// nothing is held and nothing waits.
func TestRunnerStorm(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { storm(t, seed) })
		})
	}
}

func storm(t *testing.T, seed uint64) {
	const n, lim, reserved = 200, 8, 2
	slowLim := &fakeLimit{limit: 3}
	r := NewRunner(lifecycle.Config{
		Admission: admission.Config{
			Global: admission.Fixed(lim), Reserved: reserved,
			MaxDepth: 20, MaxWait: 150 * time.Millisecond, MaxQueued: [3]int{0, 0, 10},
		},
		Scopes: []lifecycle.ScopeConfig{
			{Name: "fixed", Fixed: 5},
			{Name: "adaptive", Limit: slowLim, SlowThreshold: 40 * time.Millisecond},
		},
	}, nil)
	defer r.Close()
	var (
		granted, rejected, cancelled, expired atomic.Int64
		holding, holdingNonCrit               atomic.Int64
		reasons                               sync.Map
		wg                                    sync.WaitGroup
	)
	for i := range n {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		q := lifecycle.Request{Priority: admission.Priority(rng.IntN(3)), Scope: rng.IntN(3) - 1, Stream: rng.IntN(2) == 0}
		arrive := time.Duration(rng.IntN(400)) * time.Millisecond
		hold := time.Duration(rng.IntN(80)) * time.Millisecond
		firstByte := time.Duration(rng.IntN(80)) * time.Millisecond
		deadline := time.Duration(rng.IntN(300)) * time.Millisecond
		useDeadline := rng.IntN(4) == 0
		cancelAfter := time.Duration(rng.IntN(200)) * time.Millisecond
		mode := rng.IntN(6) // 0: cancel by hand, 1: ctx timeout, else none
		doubleFinish := rng.IntN(3) == 0
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
				q.Deadline = time.Now().Add(deadline)
			}
			c, err := r.Acquire(ctx, q)
			switch {
			case err == nil:
				h := holding.Add(1)
				if h > lim+reserved {
					t.Errorf("%d calls held at once, limit %d + reserved %d", h, lim, reserved)
				}
				if q.Priority != admission.Critical {
					if h := holdingNonCrit.Add(1); h > lim {
						t.Errorf("%d non-critical calls held at once, limit %d", h, lim)
					}
				}
				// The call lasts hold, reporting its first byte on the way
				// if it comes first, unless its context ends earlier.
				o := lifecycle.Outcome{Kind: lifecycle.OK}
				wait := func(d time.Duration) bool {
					select {
					case <-time.After(d):
						return true
					case <-c.Context().Done():
						return false
					}
				}
				done, rest := true, hold
				if firstByte < hold {
					if done = wait(firstByte); done {
						c.FirstByte()
					}
					rest -= firstByte
				}
				if done {
					done = wait(rest)
				}
				if !done {
					o.Kind = lifecycle.Cancelled
					if context.Cause(c.Context()) == ErrDeadline {
						o.Kind = lifecycle.TimedOut
						expired.Add(1)
						if time.Now().Before(q.Deadline) {
							t.Errorf("call expired %v before its deadline", time.Until(q.Deadline))
						}
					}
				}
				// The engine, not only the caller's own context, must end
				// a call at its deadline.
				if useDeadline && time.Now().After(q.Deadline) {
					t.Errorf("call ran %v past its deadline (context: %v)", time.Since(q.Deadline), context.Cause(c.Context()))
				}
				holding.Add(-1)
				if q.Priority != admission.Critical {
					holdingNonCrit.Add(-1)
				}
				if doubleFinish {
					var fw sync.WaitGroup
					fw.Go(func() { c.Finish(o) })
					fw.Go(func() { c.Finish(lifecycle.Outcome{Kind: lifecycle.Overloaded}) })
					fw.Wait()
				} else {
					c.Finish(o)
				}
				granted.Add(1)
			case errors.Is(err, admission.ErrRejected):
				var rej *admission.Rejection
				if !errors.As(err, &rej) {
					t.Errorf("rejection of type %T", err)
				}
				if q.Priority == admission.Critical && rej.Reason != admission.ReasonWaitTimeout {
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
	if s := r.Snapshot(); s.ScopeInFlight[0] != 0 || s.ScopeInFlight[1] != 0 {
		t.Errorf("after the storm: %+v", s)
	}
	wantIdle(t, r)
	if sum := granted.Load() + rejected.Load() + cancelled.Load(); sum != n {
		t.Errorf("granted %d + rejected %d + cancelled %d = %d, want %d",
			granted.Load(), rejected.Load(), cancelled.Load(), sum, n)
	}
	var why []string
	reasons.Range(func(k, v any) bool {
		why = append(why, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	samples := heard(r, slowLim)
	t.Logf("granted %d (expired %d), rejected %d %v, cancelled %d; the adaptive scope heard %d samples",
		granted.Load(), expired.Load(), rejected.Load(), why, cancelled.Load(), len(samples))
	// Each outcome should occur, or the storm is not testing what it claims.
	if granted.Load() == 0 || rejected.Load() == 0 || cancelled.Load() == 0 || expired.Load() == 0 || len(samples) == 0 {
		t.Error("the storm did not produce every kind of outcome")
	}
}
