package loadgen

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/model/workload"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/wait"
)

// request is one user's request from its first attempt to its verdict.
// Patience runs from the first attempt: that is when the user started
// waiting, and retries spend the same patience. Each attempt also has its
// own timeout (clients.timeout), which hangs up on that attempt alone.
//
// It records the timeline's events where the simulator does: Throttle or
// Arrive at the first attempt (sim.arrive), Retry at each retry, TimeOut
// and Refuse as attempts end (sim.attemptTimeout, sim.shedAnswer), Answer
// at the verdict (sim.final).
func (r *runner) request(sp *streamPlan, idx, pri int, body []byte, hdr http.Header) {
	p := r.plan
	t0 := time.Now()
	ctx := r.ctx
	if p.abandon && p.patience > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t0.Add(p.patience))
		defer cancel()
	}
	// Per request, so the draws do not depend on how the goroutines
	// interleave.
	rng := rand.New(rand.NewPCG(p.seed^uint64(idx)*0x9e3779b97f4a7c15, 0x7e7+uint64(sp.index)))
	g := r.governor(sp)
	if g != nil && !g.admit(r.tally.clock.now(t0), rng.Float64()) {
		r.tally.throttled(t0, sp.index, pri) // shed by the client itself: nothing is sent
		return
	}
	var a attempt
	for n := 1; ; n++ {
		sent := time.Now()
		// The attempt's deadline: its own timeout, cut to the patience
		// left. Only the timeout needs a timer of its own; patience is
		// the request's deadline (ctx), which ends the request rather
		// than the attempt.
		deadline := p.attemptDeadline(sent.Sub(t0))
		var timeout time.Duration
		if p.timeout > 0 && deadline >= p.timeout {
			timeout = p.timeout
		}
		h := hdr
		if p.sendDeadline {
			// The attempt's deadline, as the official SDKs send their
			// timeout (X-Stainless-Timeout), to the millisecond.
			h = hdr.Clone()
			h.Set("X-Sluice-Timeout", strconv.FormatInt(max(deadline, time.Millisecond).Milliseconds(), 10)+"ms")
		}
		r.tally.sending(sent, n > 1)
		a = r.client.do(ctx, sp.url(), sp.body.dialect, body, h, timeout)
		r.tally.attempt(pri, &a)
		if a.abandoned {
			break // the client itself gave up
		}
		if g != nil {
			g.add(r.tally.clock.now(a.end), workload.Accepted(a.status))
		}
		if a.outcome == report.OK {
			break
		}
		d, again := p.retry.Next(workload.Ended{
			Attempt:    n,
			Elapsed:    time.Since(t0),
			Status:     a.status,
			Started:    a.started,
			RetryAfter: a.hint,
			NoRetry:    a.noRetry,
		}, rng)
		if !again || (g != nil && !g.spend()) || !wait.Sleep(ctx, d) {
			break
		}
	}
	o := a.outcome
	if o == report.OK && p.patience > 0 && a.end.Sub(t0) > p.patience {
		o = report.Late
	}
	if o == report.OK || o == report.Late {
		r.tally.answer(pri, t0, a.first)
	}
	r.tally.finish(sp.index, pri, o, a.end.Sub(t0), a.first.Sub(t0), a.degraded && (o == report.OK || o == report.Late))
}

// governor is a stream's workload.Governor, shared by its requests'
// goroutines: the client package's retry budget and adaptive throttle
// (retry strategy "sluice"), one per traffic stream as in the simulator.
type governor struct {
	mu sync.Mutex
	g  *workload.Governor
}

// governor returns sp's governor, nil when the clients do not run the
// client package.
func (r *runner) governor(sp *streamPlan) *governor {
	if sp.index < len(r.govs) {
		return r.govs[sp.index]
	}
	return nil
}

// admit is a new request at now, on the scenario's clock, with draw u.
func (g *governor) admit(now time.Time, u float64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.g.Admit(now, u)
}

// add counts an attempt's answer for the throttle.
func (g *governor) add(now time.Time, accepted bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.g.Throttle.Add(now, accepted)
}

// spend pays a retry from the budget.
func (g *governor) spend() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.g.Budget.Spend()
}
