package runner

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/pool"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// ErrDeadline is the cause of a Call's context when the engine expired it.
// When the engine answers a call early instead (Ready.Abandon), the cause
// is an *admission.Rejection saying why and when to retry.
var ErrDeadline = errors.New("runner: request deadline passed")

// Runner is the concurrent shell around lifecycle.Engine that the gateway uses. It
// serialises calls with one mutex, fires the engine's timers with one
// time.Timer, and wakes each waiting request through its own channel.
// All methods are safe for concurrent use.
type Runner struct {
	now func() time.Time
	// onTransition, when set, hears every breaker transition once. It is
	// called with the Runner's lock held, so it must not call back in.
	onTransition func(lifecycle.Transition)
	// prober sends synthetic probes; see SetProber. Their contexts derive
	// from probeCtx, which Close cancels.
	prober      func(ctx context.Context, scope int) lifecycle.Outcome
	probeCtx    context.Context
	stopProbing context.CancelFunc

	mu      sync.Mutex // guards everything below
	e       *lifecycle.Engine
	waiters map[lifecycle.ID]*waiter
	calls   map[lifecycle.ID]*Call // in flight
	timer   *time.Timer
	timerAt time.Time
	closed  bool
	// next, once a reload replaced this Runner's configuration, is the
	// Runner that counts this one's calls in flight (Handover); handed is
	// what it has been told so far, and nextMap maps scopes to its.
	next    *Runner
	nextMap []int
	handed  admission.Snapshot
}

// NewRunner wraps a new lifecycle.Engine. now is the clock; nil means time.Now.
func NewRunner(cfg lifecycle.Config, now func() time.Time) *Runner {
	if now == nil {
		now = time.Now
	}
	r := &Runner{now: now, e: lifecycle.New(cfg), waiters: make(map[lifecycle.ID]*waiter), calls: make(map[lifecycle.ID]*Call)}
	r.probeCtx, r.stopProbing = context.WithCancel(context.Background())
	r.mu.Lock()
	r.armLocked(now())
	r.mu.Unlock()
	return r
}

// Close stops the Runner's timer. Calls in flight may still Finish.
func (r *Runner) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.stopProbing()
	if r.timer != nil {
		r.timer.Stop()
	}
}

// waiter is a queued request's Acquire, blocked until the engine settles it.
type waiter struct {
	ctx     context.Context
	arrived time.Time
	target  int
	// done is buffered(1). nil means started: the Runner made the Call
	// under the lock that started it, so an Expire that takes the lock
	// before the waiter's goroutine wakes still finds the Call to cancel.
	done chan error
}

// Call is an admitted request's hold on its slot.
type Call struct {
	r        *Runner
	id       lifecycle.ID
	ctx      context.Context
	cancel   context.CancelCauseFunc
	finished atomic.Bool
	// hedges delivers the request's second call (a hedge or a rescue),
	// once, if the engine sends one.
	seconds        chan lifecycle.SecondCall
	secondLive     bool        // guarded by the Runner's lock
	secondSent     atomic.Bool // secondLive, readable without the lock
	secondFinished atomic.Bool
	// replaced: a failed same-target retry was replaced by a retry on
	// the next target; the next FinishSecond ends the failed call.
	replaced atomic.Bool
	// Target indexes the request's Targets: where the engine routed it.
	Target int
	// Waited is how long the request spent in the queue.
	Waited time.Duration
	// OutputLimit is how much output the host relays of its answer
	// (lifecycle.Engine.OutputLimit): past it, the answer is cut as a
	// length stop. 0: none (an endpoint that generates no output).
	OutputLimit int64
}

// Context is done when the caller's context is, or when the engine
// expires the request at its deadline (cause ErrDeadline), or once the
// call is finished. The upstream request should carry it.
func (c *Call) Context() context.Context { return c.ctx }

// FirstByte reports the first byte of the upstream answer.
func (c *Call) FirstByte() {
	if c.finished.Load() {
		return
	}
	r := c.r
	r.mu.Lock()
	r.e.FirstByte(r.now(), c.id)
	r.mu.Unlock()
}

// Finish releases the slot and reports the outcome. Only the first call
// has an effect, so a deferred Finish after an explicit one is safe.
func (c *Call) Finish(o lifecycle.Outcome) {
	if !c.finished.CompareAndSwap(false, true) {
		return
	}
	r := c.r
	r.mu.Lock()
	now := r.now()
	rd, _ := r.e.Finish(now, c.id, o)
	r.applyLocked(now, rd)
	select {
	case <-c.seconds:
		// The engine sent a hedge the host never took (it fired as the
		// first call was finishing): it never ran, so end it here, or the
		// request would wait for it forever.
		c.secondFinished.Store(true)
		rd, _ := r.e.FinishSecond(now, c.id, lifecycle.Outcome{Kind: lifecycle.Cancelled})
		r.applyLocked(now, rd)
	default:
	}
	done := c.doneLocked()
	r.mu.Unlock()
	if done {
		c.cancel(context.Canceled)
	}
}

// doneLocked reports whether every call of the request has finished, and
// if so forgets it. REQUIRES: the Runner's lock.
func (c *Call) doneLocked() bool {
	if !c.finished.Load() || (c.secondLive && !c.secondFinished.Load()) {
		return false
	}
	delete(c.r.calls, c.id)
	return true
}

// Hedges delivers, at most once, a second call the engine wants sent
// because the first has no first byte yet: a hedge, or a rescue from a
// provider whose breaker opened. Its Target indexes the request's
// Targets. The host sends it and races the two (Commit).
func (c *Call) Seconds() <-chan lifecycle.SecondCall { return c.seconds }

// Commit reports the first byte of attempt 0 (the first call) or 1 (the
// hedge) and says whether that call's answer goes to the client: the
// first to ask wins, and the host cancels the other.
func (c *Call) Commit(attempt int) bool {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.Commit(r.now(), c.id, attempt)
}

// Retry asks for a second call after the first failed with o before any
// byte reached the client (see Engine.Retry). On true the host sends it
// to the target returned, after delay, and ends it with FinishSecond.
func (c *Call) Retry(o lifecycle.Outcome) (target int, delay time.Duration, ok bool) {
	rc, ok := c.RetryCall(o)
	return rc.Target, rc.Delay, ok
}

// RetryCall is Retry with the rule that chose the retry (see
// Engine.RetryCall). A retry granted when a same-target retry failed
// replaces that call: the host's next End(1) ends the failed one, and
// the End(1) after it the new one.
func (c *Call) RetryCall(o lifecycle.Outcome) (lifecycle.RetryChoice, bool) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, ok := r.e.RetryCall(r.now(), c.id, o)
	if ok {
		if c.secondSent.Load() {
			c.replaced.Store(true)
		}
		c.secondLive = true
		c.secondSent.Store(true)
	}
	return rc, ok
}

// Replica is the replica of a pooled provider that the request's call
// (attempt 0 or 1) goes to, once the engine has started it: the first
// call's when the Call is handed out, a second call's once it is sent
// (Seconds) or granted (Retry). ok is false for a provider that is not
// a pool.
func (c *Call) Replica(attempt int) (int, bool) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.Replica(c.id, attempt)
}

// End reports how one of the request's calls ended, by its attempt
// number: 0 the first call, 1 the second. Only the first report of each
// has an effect, so a deferred End after an explicit one is safe.
func (c *Call) End(attempt int, o lifecycle.Outcome) {
	if attempt == 0 {
		c.Finish(o)
	} else {
		c.FinishSecond(o)
	}
}

// FinishSecond ends the hedge and reports its outcome. Only the first call
// has an effect.
func (c *Call) FinishSecond(o lifecycle.Outcome) {
	// Most requests never have a second call: no lock for them. A hedge
	// fired after this check is one the host never took, and Finish ends
	// it.
	if !c.secondSent.Load() || (!c.replaced.CompareAndSwap(true, false) && !c.secondFinished.CompareAndSwap(false, true)) {
		return
	}
	r := c.r
	r.mu.Lock()
	now := r.now()
	rd, _ := r.e.FinishSecond(now, c.id, o)
	r.applyLocked(now, rd)
	done := c.doneLocked()
	r.mu.Unlock()
	if done {
		c.cancel(context.Canceled)
	}
}

// Check reports, without taking a slot, whether req would be refused at
// once; nil if not.
func (r *Runner) Check(req lifecycle.Request) *admission.Rejection {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, refused := r.e.Check(r.now(), req); refused {
		return rejection(f)
	}
	return nil
}

// BudgetStats reports every budget (Engine.BudgetStats).
func (r *Runner) BudgetStats() []lifecycle.BudgetStat {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.BudgetStats(r.now())
}

// Reservation and Used apply the engine's budget rules
// (Engine.Reservation).
func (r *Runner) Reservation(req lifecycle.Request) quota.Cost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.Reservation(req)
}

// Used: see Reservation.
func (r *Runner) Used(req lifecycle.Request, o lifecycle.Outcome) quota.Cost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.Used(req, o)
}

// SetKey sets key k's budget and tenant (Engine.SetKey).
func (r *Runner) SetKey(k int, l quota.Limits, tenant int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.e.SetKey(k, l, tenant)
}

// KeyReserved reports what requests hold of key k's budget
// (Engine.KeyReserved).
func (r *Runner) KeyReserved(k int) [3]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.KeyReserved(k)
}

// KeyStatus reports key k's budget (Engine.KeyStatus).
func (r *Runner) KeyStatus(k int) ([3]quota.Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.KeyStatus(r.now(), k)
}

// ShouldDegrade reports whether req should be served degraded
// (Engine.ShouldDegrade).
func (r *Runner) ShouldDegrade(req lifecycle.Request, d lifecycle.Degradation) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.ShouldDegrade(r.now(), req, d)
}

func rejection(f admission.Refusal) *admission.Rejection {
	return &admission.Rejection{Reason: f.Reason, Priority: f.Priority, RetryAfter: f.RetryAfter, Futile: f.Futile}
}

// Acquire admits req, waiting in the queue if the engine says so, until
// started, refused, or ctx is done. On success the caller must Finish the
// call. A refusal is an *admission.Rejection; if ctx ends first, ctx's
// error.
func (r *Runner) Acquire(ctx context.Context, req lifecycle.Request) (*Call, error) {
	r.mu.Lock()
	now := r.now()
	a, rd := r.e.Arrive(now, req)
	switch a.Verdict {
	case admission.Admitted:
		c := r.newCallLocked(ctx, a.ID, 0, a.Target)
		r.applyLocked(now, rd)
		r.mu.Unlock()
		return c, nil
	case admission.Rejected:
		r.applyLocked(now, rd)
		r.mu.Unlock()
		rej := rejection(a.Refusal)
		if a.Refusal.Reason == admission.ReasonKeyBudget || a.Refusal.Reason == admission.ReasonLaneBudget {
			rej.Dimension, rej.TooLarge = a.Budget.Dimension.String(), a.Budget.Never
		}
		return nil, rej
	}
	// Registered before the arrival's own Ready is carried out, which may
	// already start it (a trip settled by this arrival moves it on).
	w := &waiter{ctx: ctx, arrived: now, target: a.Target, done: make(chan error, 1)}
	r.waiters[a.ID] = w
	r.applyLocked(now, rd)
	r.mu.Unlock()

	select {
	case err := <-w.done:
		if err != nil {
			return nil, err
		}
		return r.claim(a.ID), nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	left := r.e.Leave(r.now(), a.ID)
	if left {
		delete(r.waiters, a.ID)
	}
	r.mu.Unlock()
	if !left {
		// The engine settled us between ctx ending and the lock: if it
		// started the call, hand the slot straight back.
		if err := <-w.done; err == nil {
			r.claim(a.ID).Finish(lifecycle.Outcome{Kind: lifecycle.Cancelled})
		}
	}
	return nil, ctx.Err()
}

// claim hands a started waiter the Call the Runner made for it.
func (r *Runner) claim(id lifecycle.ID) *Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[id]
}

func (r *Runner) newCallLocked(ctx context.Context, id lifecycle.ID, waited time.Duration, target int) *Call {
	cctx, cancel := context.WithCancelCause(ctx)
	c := &Call{r: r, id: id, ctx: cctx, cancel: cancel, Waited: waited, Target: target, seconds: make(chan lifecycle.SecondCall, 1),
		OutputLimit: r.e.OutputLimitOf(id)}
	r.calls[id] = c
	return c
}

// applyLocked carries out a Ready.
func (r *Runner) applyLocked(now time.Time, rd lifecycle.Ready) {
	for _, id := range rd.Start {
		if w, ok := r.waiters[id]; ok {
			delete(r.waiters, id)
			target := w.target
			if t, ok := r.e.Target(id); ok {
				target = t // the engine may have moved it while it waited
			}
			r.newCallLocked(w.ctx, id, now.Sub(w.arrived), target)
			w.done <- nil
		}
	}
	for _, f := range rd.Refuse {
		if w, ok := r.waiters[f.Ticket]; ok {
			delete(r.waiters, f.Ticket)
			w.done <- rejection(f)
		}
	}
	for _, id := range rd.Expire {
		if c, ok := r.calls[id]; ok {
			c.cancel(ErrDeadline)
		}
	}
	for _, f := range rd.Abandon {
		if c, ok := r.calls[f.Ticket]; ok {
			c.cancel(rejection(f))
		}
	}
	for _, h := range rd.Second {
		if c, ok := r.calls[h.ID]; ok && !c.secondLive {
			c.secondLive = true
			c.secondSent.Store(true)
			c.seconds <- h // buffered: one second call per request
		}
	}
	for _, p := range rd.Probe {
		if !r.closed {
			go r.probe(p, p.Deadline.Sub(now))
		}
	}
	if r.onTransition != nil {
		for _, t := range rd.Transitions {
			r.onTransition(t)
		}
	}
	r.armLocked(now)
	r.forwardLocked(now)
}

// Handover makes next count this Runner's calls in flight against its
// limits until they end: a reloaded configuration (next) inherits the
// calls its predecessor still runs upstream, and those of its waiters
// that start later, so that the concurrency limits hold in sum while
// both run. scopeMap[s] is this Runner's scope s in next, or -1 when the
// new configuration has no such provider (its calls then count
// globally only). Locks are taken old before new, never the other way,
// so a chain of reloads cannot deadlock.
func (r *Runner) Handover(next *Runner, scopeMap []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next, r.nextMap = next, append([]int(nil), scopeMap...)
	r.handed = admission.Snapshot{ScopeInFlight: make([]int, len(scopeMap))}
	r.forwardLocked(r.now())
}

// forwardLocked tells next how this Runner's calls in flight changed
// since it last did. REQUIRES: the Runner's lock.
func (r *Runner) forwardLocked(now time.Time) {
	if r.next == nil {
		return
	}
	s := r.e.Snapshot(now)
	global := s.InFlight - r.handed.InFlight
	changed := global != 0
	var scoped []int
	for i, n := range s.ScopeInFlight {
		if i >= len(r.nextMap) {
			break
		}
		d := n - r.handed.ScopeInFlight[i]
		if d == 0 {
			continue
		}
		changed = true
		r.handed.ScopeInFlight[i] = n
		if j := r.nextMap[i]; j >= 0 {
			if j >= len(scoped) {
				scoped = append(scoped, make([]int, j+1-len(scoped))...)
			}
			scoped[j] += d
		}
	}
	if !changed {
		return
	}
	r.handed.InFlight = s.InFlight
	r.next.inherit(global, scoped)
}

// inherit applies a predecessor's change (forwardLocked).
func (r *Runner) inherit(global int, scoped []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.applyLocked(now, r.e.Inherit(now, global, scoped))
}

// OnTransition sets the hook that hears every breaker transition once.
// It runs with the Runner's lock held, so it must be quick and must not
// call the Runner.
func (r *Runner) OnTransition(fn func(lifecycle.Transition)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onTransition = fn
}

// SetProber sets how synthetic probes are sent (ScopeConfig
// SyntheticProbes): fn makes one probe call to scope's provider and says
// how it ended; ctx ends at the probe's deadline. Each probe runs on its
// own goroutine, outside the Runner's lock. Without a prober, a probe
// fails at once (the provider stays out of rotation).
func (r *Runner) SetProber(fn func(ctx context.Context, scope int) lifecycle.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prober = fn
}

// probe sends one synthetic probe, given up after timeout (measured on
// the real clock, like the Runner's timer), and reports it. After Close
// the probe's context is already done.
func (r *Runner) probe(p lifecycle.ProbeStart, timeout time.Duration) {
	r.mu.Lock()
	fn := r.prober
	r.mu.Unlock()
	o := lifecycle.Outcome{Kind: lifecycle.Failed}
	if fn != nil {
		ctx, cancel := context.WithTimeout(r.probeCtx, timeout)
		o = fn(ctx, p.Scope)
		cancel()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	rd, _ := r.e.FinishProbe(now, p.ID, o)
	r.applyLocked(now, rd)
}

// SetEvalDegraded marks a model's target degraded by its evals, or not
// (Engine.SetEvalDegraded).
func (r *Runner) SetEvalDegraded(model string, target int, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.e.SetEvalDegraded(model, target, on)
}

// SecondStats reports the engine's hedging counters.
func (r *Runner) SecondStats() lifecycle.SecondStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.SecondStats()
}

// BreakerStats reports each scope's breaker, nil where a scope has none
// (Engine.BreakerStats).
func (r *Runner) BreakerStats() []*breaker.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.BreakerStats(r.now())
}

// Observe hands the engine a scrape of a pooled provider's replica
// (scope s, replica i); see Engine.Observe.
func (r *Runner) Observe(s, i int, l pool.Load) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.applyLocked(now, r.e.Observe(now, s, i, l))
}

// PoolStats reports scope s's replicas, nil if it is not a pool.
func (r *Runner) PoolStats(s int) []pool.Stat {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.PoolStats(r.now(), s)
}

// armLocked points the timer at the engine's next timer, the only one
// it arms (a windowed limit's window end included), as the simulator
// does on its virtual clock.
func (r *Runner) armLocked(now time.Time) {
	if r.closed {
		return
	}
	next, ok := r.e.NextTimer()
	if !ok {
		return
	}
	at := next
	if r.timer != nil && at.Equal(r.timerAt) {
		return
	}
	if r.timer != nil && !r.timerAt.IsZero() && r.timerAt.Before(at) && r.timerAt.After(now) {
		return // an earlier wake-up is already set; it will re-arm
	}
	r.timerAt = at
	if r.timer == nil {
		r.timer = time.AfterFunc(at.Sub(now), r.tick)
		return
	}
	r.timer.Reset(at.Sub(now))
}

func (r *Runner) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.timerAt = time.Time{}
	r.applyLocked(now, r.e.Tick(now))
}

// Snapshot reports the engine's admission state.
func (r *Runner) Snapshot() admission.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.Snapshot(r.now())
}

// BoundRetryAfter is the wait a provider's Retry-After d earns on scope
// (see Engine.BoundRetryAfter): the most a host passes on to a client.
func (r *Runner) BoundRetryAfter(scope int, d time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.BoundRetryAfter(scope, d)
}
