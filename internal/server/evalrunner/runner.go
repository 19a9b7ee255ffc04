package evalrunner

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/core/evals"
)

// Caller makes one eval call: case c of set s against its target, and
// says how it ended. ctx ends at the set's Timeout, or when the Runner
// closes. It must not charge any client's key or budget, nor count the
// call as a client request.
type Caller func(ctx context.Context, s *evals.Set, target int, c evals.Case) evals.Result

// Hooks are told what the evals find. Either may be nil. They are
// called from the Runner's goroutines, one at a time.
type Hooks struct {
	// Result hears every call's end, with the target's pass rate over
	// its window after it and the answers that rate counts (0: none).
	Result func(s *evals.Set, target int, c evals.Case, r evals.Result, passRate float64, judged int)
	// Transition hears a target becoming degraded or recovering, once
	// each time.
	Transition func(evals.Transition)
}

// Runner is evals.Core's concurrent shell: one goroutine that waits for
// the Core's next timer, and one per eval call in flight (at most the
// Core's MaxInFlight). Close stops it and waits for every goroutine.
type Runner struct {
	mu    sync.Mutex
	core  *evals.Core
	now   func() time.Time
	call  Caller
	hooks Hooks

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{}
	closed sync.Once
}

// NewRunner builds a Runner for o, on the clock now (nil: time.Now), and
// starts it.
func NewRunner(o evals.Options, now func() time.Time, call Caller, hooks Hooks) *Runner {
	if now == nil {
		now = time.Now
	}
	r := &Runner{core: evals.NewCore(o, now()), now: now, call: call, hooks: hooks, wake: make(chan struct{}, 1)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.wg.Add(1)
	go r.loop()
	return r
}

func (r *Runner) loop() {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		now := r.now()
		calls := r.core.Due(now)
		next, ok := r.core.NextTimer()
		r.mu.Unlock()
		for _, c := range calls {
			r.wg.Add(1)
			go r.do(c)
		}
		wait := time.Hour
		if ok {
			wait = max(next.Sub(now), 0)
		}
		timer.Reset(wait)
		select {
		case <-r.ctx.Done():
			return
		case <-timer.C:
		case <-r.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
	}
}

func (r *Runner) do(c evals.Call) {
	defer r.wg.Done()
	cs := c.Set.Cases[c.Case]
	ctx, cancel := context.WithTimeout(r.ctx, c.Set.Timeout)
	res := r.call(ctx, c.Set, c.Target, cs)
	cancel()
	if r.ctx.Err() != nil {
		return // shutting down: no verdict
	}
	r.mu.Lock()
	trans := r.core.Done(r.now(), c.ID, res)
	if r.hooks.Result != nil {
		rate, judged := r.core.PassRate(c.Set.Model, c.Target)
		r.hooks.Result(c.Set, c.Target, cs, res, rate, judged)
	}
	for _, t := range trans {
		if r.hooks.Transition != nil {
			r.hooks.Transition(t)
		}
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Status reports every set's targets (see evals.Core.Status).
func (r *Runner) Status() []evals.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.core.Status()
}

// Degraded reports whether a model's target is degraded now.
func (r *Runner) Degraded(model string, target int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.core.Degraded(model, target)
}

// Close stops the schedule, cancels the calls in flight and waits for
// every goroutine the Runner started.
func (r *Runner) Close() {
	r.closed.Do(func() {
		r.cancel()
		r.wg.Wait()
	})
}
