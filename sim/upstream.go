package sim

import (
	"time"

	"github.com/sluice-gw/sluice/lifecycle"
	"github.com/sluice-gw/sluice/mock"
	"github.com/sluice-gw/sluice/report"
)

var lifecycleCancelled = lifecycle.Outcome{Kind: lifecycle.Cancelled}

// upstream models one provider: per-call behaviour from mock.Planner (the
// same draws sluice mock makes for the same seed) and the mock's capacity
// model, a number of running calls and a FIFO of waiting ones.
type upstream struct {
	cfg       mock.Config
	planner   *mock.Planner
	anthropic bool
	running   int
	waiting   []*request
}

func newUpstream(cfg mock.Config, anthropic bool) *upstream {
	return &upstream{cfg: cfg, planner: mock.NewPlanner(cfg), anthropic: anthropic}
}

// upCall is one call at an upstream.
type upCall struct {
	u       *upstream
	plan    mock.Plan
	running bool
	queued  bool
	outcome lifecycle.OutcomeKind
	status  int // the HTTP status of a failure, if any
}

// startUpstream sends q's call to its provider.
func (r *run) startUpstream(q *request) {
	u := r.ups[q.scope]
	c := &upCall{u: u, plan: u.planner.Next(r.now)}
	q.up = c
	switch {
	case u.cfg.MaxRunning == 0 || u.running < u.cfg.MaxRunning:
		r.generate(q)
	case u.cfg.MaxWaiting < 0 || (u.cfg.MaxWaiting > 0 && len(u.waiting) >= u.cfg.MaxWaiting):
		c.outcome = lifecycle.Overloaded // 503/529 at once
		r.push(r.now, classUpstream, evDone, q)
	default:
		c.queued = true
		u.waiting = append(u.waiting, q)
	}
}

// generate starts generating q's answer and schedules its first byte and end.
func (r *run) generate(q *request) {
	c := q.up
	u := c.u
	c.queued, c.running = false, true
	u.running++
	p := c.plan
	tokens := max(1, p.Tokens)
	if mt := r.sc.Clients.MaxTokens; mt > 0 {
		tokens = min(tokens, mt)
	}
	slow := 1 + u.cfg.BatchSlowdown*float64(u.running-1)
	tpot := time.Duration(float64(u.cfg.TPOT) * p.TPOTScale * slow)
	first := r.now + p.TTFT
	end := first + time.Duration(tokens-1)*tpot
	c.outcome = lifecycle.OK
	if f := p.Fail; f != nil {
		switch f.Kind {
		case mock.FailStatus:
			c.outcome = lifecycle.Failed
			c.status = f.Status
			if f.Status == 429 || f.Status == 503 || f.Status == 529 {
				c.outcome = lifecycle.Overloaded
			}
			first, end = r.now+f.Delay, r.now+f.Delay
		case mock.FailHang:
			return // never answers: the deadline or the client ends it
		case mock.FailReset:
			c.outcome = lifecycle.ConnError
			if f.AfterTokens == 0 {
				first, end = r.now+f.Delay, r.now+f.Delay
			} else {
				end = first + time.Duration(min(f.AfterTokens, tokens)-1)*tpot
			}
		default: // malformed, truncate: a broken answer
			c.outcome = lifecycle.Failed
		}
	}
	if !r.sc.Clients.Stream {
		first = end // a whole answer's headers come with its body
	}
	if first < end {
		r.push(first, classUpstream, evFirstByte, q)
	}
	r.push(end, classUpstream, evDone, q)
}

func (r *run) firstByte(q *request) {
	r.eng.FirstByte(r.clock(r.now), q.id)
	q.ttft = r.now - q.first
}

// upstreamDone ends q's call with its planned outcome.
func (r *run) upstreamDone(q *request) {
	c := q.up
	r.release(c)
	id := q.id
	r.leaveGateway(q)
	q.up = nil
	rd, _ := r.eng.Finish(r.clock(r.now), id, lifecycle.Outcome{Kind: c.outcome, Status: c.status, OutputTokens: c.plan.Tokens})
	if c.outcome == lifecycle.OK {
		r.answered(q)
	} else {
		r.fail(q, report.Failed, 0)
	}
	r.apply(rd)
}

// cancelUpstream abandons q's call, as a cancelled HTTP request does.
func (r *run) cancelUpstream(q *request) {
	c := q.up
	if c == nil {
		return
	}
	q.up = nil
	if c.queued {
		for i, w := range c.u.waiting {
			if w == q {
				c.u.waiting = append(c.u.waiting[:i], c.u.waiting[i+1:]...)
				break
			}
		}
		return
	}
	r.release(c)
}

// release frees a running call's place and starts the next waiter.
func (r *run) release(c *upCall) {
	if !c.running {
		return
	}
	c.running = false
	u := c.u
	u.running--
	if len(u.waiting) > 0 {
		next := u.waiting[0]
		u.waiting = u.waiting[1:]
		r.generate(next)
	}
}
