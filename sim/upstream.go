package sim

import (
	"slices"
	"time"

	"github.com/sluice-gw/sluice/lifecycle"
	"github.com/sluice-gw/sluice/mock"
	"github.com/sluice-gw/sluice/report"
	"github.com/sluice-gw/sluice/workload"
)

// upstream models one provider: per-call behaviour from mock.Planner (the
// same draws sluice mock makes for the same seed) and the capacity model
// sluice mock runs, workload.Capacity, driven here on the virtual clock.
type upstream struct {
	cfg       mock.Config
	planner   *mock.Planner
	anthropic bool
	capacity  *workload.Capacity[*upCall]
}

func newUpstream(cfg mock.Config, anthropic bool) *upstream {
	return &upstream{
		cfg: cfg, planner: mock.NewPlanner(cfg), anthropic: anthropic,
		capacity: workload.NewCapacity[*upCall](cfg.MaxRunning, cfg.MaxWaiting, cfg.BatchSlowdown),
	}
}

// upCall is one call at an upstream: a request's first call (attempt 0)
// or its hedge (attempt 1).
type upCall struct {
	u       *upstream
	q       *request
	attempt int
	plan    mock.Plan
	running bool
	queued  bool
	delayed bool // a retry waiting out its delay, not yet sent
	done    bool // finished or cancelled: its pending events are stale
	// firstAt and doneAt: when its first byte and its end are due.
	firstAt, doneAt time.Duration
	outcome         lifecycle.OutcomeKind
	status          int // the HTTP status of a failure, if any
	// probe names a synthetic probe (q is nil then): one output token,
	// reported with FinishProbe.
	probe lifecycle.ProbeID
}

// result is how the call ended, as the gateway would report it: with the
// provider's Retry-After on a refusal.
func (c *upCall) result() lifecycle.Outcome {
	o := lifecycle.Outcome{Kind: c.outcome, Status: c.status, OutputTokens: c.plan.Tokens}
	if f := c.plan.Fail; f != nil && f.Kind == mock.FailStatus {
		o.RetryAfter = f.RetryAfter
	}
	return o
}

// startProbe sends a synthetic probe to its provider, to be given up at
// its deadline.
func (r *run) startProbe(p lifecycle.ProbeStart) {
	c := &upCall{u: r.ups[p.Scope], probe: p.ID}
	r.probes = append(r.probes, c)
	r.launch(c)
	r.pushCall(p.Deadline.Sub(origin), evProbeLimit, c)
}

// probeDone reports a synthetic probe's end to the engine.
func (r *run) probeDone(c *upCall, o lifecycle.Outcome) {
	if c.done {
		return
	}
	r.cancelCall(c)
	if i := slices.Index(r.probes, c); i >= 0 {
		r.probes = slices.Delete(r.probes, i, i+1)
	}
	rd, _ := r.eng.FinishProbe(r.clock(r.now), c.probe, o)
	r.apply(rd)
}

// startUpstream sends q's first call to the provider it was routed to.
func (r *run) startUpstream(q *request) { r.startCall(q, 0, q.scope) }

// startCall sends one of q's calls to the provider of scope.
func (r *run) startCall(q *request, attempt, scope int) {
	c := &upCall{u: r.ups[scope], q: q, attempt: attempt}
	q.calls[attempt] = c
	r.launch(c)
}

// startCallAfter sends one of q's calls after a wait (a retry honouring
// the provider's Retry-After). The call exists from now, so a client
// that leaves during the wait cancels it like any other.
func (r *run) startCallAfter(q *request, attempt, scope int, delay time.Duration) {
	c := &upCall{u: r.ups[scope], q: q, attempt: attempt, delayed: true}
	q.calls[attempt] = c
	r.pushCall(r.now+delay, evLaunch, c)
}

// launch puts a call to its provider: running, queued, or refused at
// once when the provider's queue is full.
func (r *run) launch(c *upCall) {
	u := c.u
	c.delayed = false
	c.plan = u.planner.Next(r.now)
	if f := c.plan.Fail; f != nil && f.Early() {
		r.replaced(c, f)
		return
	}
	switch u.capacity.Admit(c) {
	case workload.Run:
		r.generate(c)
	case workload.Refuse:
		// Refused at once, as the mock refuses: 503 (529 on Anthropic's API).
		c.status = 503
		if u.anthropic {
			c.status = 529
		}
		c.outcome = lifecycle.StatusOutcome(c.status, 0).Kind
		r.pushCall(r.now, evDone, c)
	default:
		c.queued = true
	}
}

// replaced plays a failure that takes the whole call's place, as the
// mock plays it: before admission, so it holds no slot, never waits and
// is never refused.
func (r *run) replaced(c *upCall, f *mock.Failure) {
	switch f.Kind {
	case mock.FailHang:
		return // never answers: the deadline or the client ends it
	case mock.FailStatus:
		c.status = f.StatusCode()
		c.outcome = lifecycle.StatusOutcome(c.status, 0).Kind
	default: // a reset before any byte
		c.outcome = lifecycle.ConnError
	}
	r.pushCall(r.now+f.Delay, evDone, c)
}

// generate starts producing c's answer and schedules its first byte and
// its end.
func (r *run) generate(c *upCall) {
	u := c.u
	c.queued, c.running = false, true
	p := c.plan
	tokens := max(1, p.Tokens)
	if mt := r.sc.Clients.MaxTokens; mt > 0 {
		tokens = min(tokens, mt)
	}
	if c.probe != 0 {
		tokens = 1
	}
	// The batch as it stands when the call starts; the mock re-reads it
	// per token, which would cost an event per token here.
	tpot := u.capacity.TPOT(u.cfg.TPOT, p.TPOTScale)
	first := r.now + p.TTFT
	end := first + time.Duration(tokens-1)*tpot
	c.outcome = lifecycle.OK
	if f := p.Fail; f != nil {
		// Only failures that corrupt a generated answer get here (see
		// replaced).
		switch f.Kind {
		case mock.FailReset:
			c.outcome = lifecycle.ConnError
			end = first + time.Duration(min(f.AfterTokens, tokens)-1)*tpot
		default: // malformed, truncate: a broken answer
			c.outcome = lifecycle.Failed
		}
	}
	if !r.sc.Clients.Stream || c.outcome != lifecycle.OK || c.probe != 0 {
		first = end // a whole answer's headers come with its body
	}
	if first < end {
		r.pushCall(first, evFirstByte, c)
	}
	r.pushCall(end, evDone, c)
}

// firstByte: one of q's calls produced its first byte. If it is the
// first to, its answer goes to the client and the other call is
// cancelled.
func (r *run) firstByte(c *upCall) {
	q := c.q
	if !r.eng.Commit(r.clock(r.now), q.id, c.attempt) {
		return
	}
	q.ttft = r.now - q.first
	q.started = true
	r.cancelOther(c)
}

// upstreamDone ends c with its planned outcome.
func (r *run) upstreamDone(c *upCall) {
	if c.probe != 0 {
		r.probeDone(c, c.result())
		return
	}
	q := c.q
	r.release(c)
	c.done = true
	won := c.outcome == lifecycle.OK && r.eng.Commit(r.clock(r.now), q.id, c.attempt)
	if won {
		r.cancelOther(c)
	}
	o := c.result()
	if !won && c.attempt == 0 && !r.live(q) {
		// About to give up: ask for a retry on another target first, as
		// the gateway does, then finish the failed call.
		if ti, delay, ok := r.eng.Retry(r.clock(r.now), q.id, o); ok {
			r.apply(r.finishCall(c, o))
			if delay > 0 {
				r.startCallAfter(q, 1, r.targets[ti], delay)
			} else {
				r.startCall(q, 1, r.targets[ti])
			}
			return
		}
	}
	rd := r.finishCall(c, o)
	switch {
	case won:
		r.leaveGateway(q)
		r.answered(q)
	case r.live(q):
		// The other call may still answer.
	default:
		r.leaveGateway(q)
		r.fail(q, report.Failed, 0)
	}
	r.apply(rd)
}

// finishCall reports a call's end to the engine.
func (r *run) finishCall(c *upCall, o lifecycle.Outcome) lifecycle.Ready {
	rd, _ := r.eng.End(r.clock(r.now), c.q.id, c.attempt, o)
	return rd
}

// live reports whether any of q's calls is still going.
func (r *run) live(q *request) bool {
	for _, c := range q.calls {
		if c != nil && !c.done {
			return true
		}
	}
	return false
}

// cancelOther cancels the call that lost to c, and tells the engine.
func (r *run) cancelOther(c *upCall) {
	if o := c.q.calls[1-c.attempt]; o != nil && !o.done {
		r.cancelCall(o)
		r.apply(r.finishCall(o, lifecycleCancelled))
	}
}

// cancelCalls abandons every call of q, as cancelled HTTP requests do,
// telling the engine how each ended: the first call with o, a hedge as
// cancelled. tellEngine is false after a crash, when the engine is gone.
func (r *run) cancelCalls(q *request, o lifecycle.Outcome, tellEngine bool) lifecycle.Ready {
	var rd lifecycle.Ready
	for _, c := range q.calls {
		if c == nil || c.done {
			continue
		}
		r.cancelCall(c)
		if tellEngine {
			co := lifecycleCancelled // a second call is only ever cancelled here
			if c.attempt == 0 {
				co = o
			}
			rd.Merge(r.finishCall(c, co))
		}
	}
	return rd
}

var lifecycleCancelled = lifecycle.Outcome{Kind: lifecycle.Cancelled}

// cancelCall abandons one call.
func (r *run) cancelCall(c *upCall) {
	if c.done {
		return
	}
	c.done = true
	if c.queued {
		c.queued = false
		c.u.capacity.Withdraw(c)
		return
	}
	r.release(c)
}

// release frees a running call's place; the capacity model hands it to
// the oldest waiter, which starts now.
func (r *run) release(c *upCall) {
	if !c.running {
		return
	}
	c.running = false
	if next, ok := c.u.capacity.End(); ok {
		r.generate(next)
	}
}
