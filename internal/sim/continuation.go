package sim

import (
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	upmodel "github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/policy"
	"github.com/sluice-gw/sluice/internal/sim/report"
)

// Mid-stream continuation, played as the gateway plays it
// (gateway/relay_continue.go), with the same core decision
// (lifecycle.Engine.Continue): a streamed answer that breaks after its
// first token (a reset after some tokens, a truncated answer) is not
// restarted, it is continued on the target the engine names, which
// generates what was left of it. The broken call ends in the engine
// then, as broken, with the tokens it generated; the continuation is
// the host's own call, which loads its provider but holds no slot, and
// the request is answered when it finishes, or failed when nothing can
// continue. (No shipped scenario breaks a stream after its first token,
// so their figures do not move.)

// contState is a request's continuation: what each target can still do
// for it, the continuations made, and the broken call, whose end the
// engine hears when the continuation ends (as the gateway reports it
// after its relay), with the attempts' summed output.
type contState struct {
	caps   []lifecycle.ContinueCaps
	done   int
	broken *upCall
	o      lifecycle.Outcome
}

// midStream: c is a streamed answer that breaks after its first token
// (a reset, an end, a truncation or a malformed event after some
// tokens, or a stall the gateway cuts), which the gateway commits, and
// continues when it breaks.
func (r *run) midStream(c *upCall, first, end time.Duration) bool {
	f := c.plan.Fail
	if !r.sc.Clients.Stream || c.probe != 0 || c.q == nil || f == nil || first >= end || c.endKind == lifecycle.EndAnswered {
		return false
	}
	switch f.Kind {
	case upmodel.FailReset:
		return !f.Early()
	case upmodel.FailStall:
		return c.stallCut
	case upmodel.FailEOF, upmodel.FailTruncate, upmodel.FailMalformed:
		return f.AfterTokens > 0
	}
	return false
}

// cutAfter plays, on a stream, an end, a truncation or a malformed event
// after the first f.AfterTokens tokens: the stream breaks there, as the
// gateway sees it (a whole answer, or a break before any token, ends as
// before).
func (r *run) cutAfter(c *upCall, f *upmodel.Failure, stream bool, first time.Duration, end *time.Duration) {
	if !stream || c.q == nil || f.AfterTokens <= 0 || f.AfterTokens >= c.tokens {
		return
	}
	c.tokens = f.AfterTokens
	*end = first + time.Duration(c.tokens-1)*c.tpot
}

// stallCut plays a stream that goes quiet after its first tokens as the
// gateway's relay does: cut at the core's stall deadline for the
// stream's gaps (stallCutAt), unless it resumes before that or no target
// of its model could continue it (then the relay waits out the idle
// timeout, and the stall plays as before). It reports whether the call
// is cut.
func (r *run) stallCut(c *upCall, f *upmodel.Failure, stream bool, first time.Duration, end *time.Duration) bool {
	at := min(f.AfterTokens, c.tokens)
	if !stream || c.q == nil || at <= 0 || !r.continuable(c.q) {
		return false
	}
	silentFrom := first + time.Duration(at-1)*c.tpot
	cut := r.stallCutAt(silentFrom, c.tpot, at)
	if f.For > 0 && silentFrom+f.For <= cut {
		return false // it resumes in time
	}
	c.tokens, *end = at, cut
	c.endKind, c.status = lifecycle.EndBroken, http.StatusOK
	c.stallCut = true
	return true
}

// continuable: some target of q's model can continue an answer.
func (r *run) continuable(q *request) bool {
	for _, k := range r.contCaps(q) {
		if k.Mode() != lifecycle.ContinueNone {
			return true
		}
	}
	return false
}

// carryOn plays the end of a call that is part of a continuation: a
// committed stream that broke, or a continuation call. It reports false
// for any other call, which ends as before.
func (r *run) carryOn(c *upCall) bool {
	q := c.q
	if q == nil || !c.cont && !(c.midStream && q.committed == c && c.endKind != lifecycle.EndAnswered) {
		return false
	}
	r.release(c)
	c.done = true
	switch {
	case !c.cont:
		q.cont = &contState{caps: r.contCaps(q), broken: c, o: c.result()}
	case c.endKind == lifecycle.EndAnswered:
		q.cont.o.OutputTokens += c.tokens
		r.endCont(q, c.u)
		return true
	case c.midStream:
		q.cont.o.OutputTokens += c.tokens
	}
	r.continueFrom(q, c)
	return true
}

// continueFrom asks the engine where q's answer, broken on call c, goes
// on, and starts the continuation there; or fails q when nothing can
// continue it.
func (r *run) continueFrom(q *request, c *upCall) {
	left := c.want
	switch {
	case c.midStream:
		left -= c.tokens
	case c.cont:
		left = c.contLeft // it failed before any token
	}
	d := q.rep.eng.Continue(r.clock(r.now), q.id, lifecycle.BreakCut, q.cont.caps, q.cont.done, false)
	if !d.OK || left <= 0 {
		r.endCont(q, nil)
		return
	}
	q.cont.caps[d.Target] = lifecycle.ContinueCaps{} // once per answer
	q.cont.done++
	slot := 1 - c.attempt
	scope := q.targets[d.Target]
	nc := &upCall{u: r.ups[scope], q: q, attempt: slot, cont: true, contLeft: left}
	if reps := r.pools[scope]; reps != nil {
		nc.u = reps[0]
	}
	q.calls[slot] = nc
	r.launch(nc)
}

// endCont ends q's continued answer: answered by u, or failed (u nil).
// The engine hears the broken call's end now.
func (r *run) endCont(q *request, u *upstream) {
	rd := r.finishCall(q.cont.broken, q.cont.o)
	r.leaveGateway(q)
	if u != nil {
		r.answered(q, u, r.now)
	} else {
		r.fail(q, report.Failed, 0)
	}
	r.apply(q.rep, rd)
}

// contCaps is what each of q's targets can do to continue an answer,
// from the gateway's config (policy.ContinueCaps, by provider), in q's
// targets' order.
func (r *run) contCaps(q *request) []lifecycle.ContinueCaps {
	caps := make([]lifecycle.ContinueCaps, len(q.targets))
	for i, s := range q.targets {
		if s < len(r.cfg.Providers) {
			caps[i] = policy.ContinueCaps(r.cfg, config.Model{}, r.cfg.Providers[s].Name, "")
		}
	}
	return caps
}

// stallCutAt is when the gateway cuts a stream that goes quiet after its
// nth token, which came at last, its tokens tpot apart: at the stall
// deadline the core derives from those gaps (lifecycle.StallDeadline,
// the relay's own rule), never past the idle timeout. A stall fault of
// the upstream model breaks a stream there, and the break is continued
// like a cut (continueFrom).
func (r *run) stallCutAt(last, tpot time.Duration, n int) time.Duration {
	d := lifecycle.StallDeadline(policy.Stall(r.cfg), lifecycle.Gaps{N: max(0, n-1), Mean: tpot})
	if idle := r.cfg.Server.WithDefaults().StreamIdleTimeout.D(); idle > 0 {
		d = min(d, idle)
	}
	return last + d
}
