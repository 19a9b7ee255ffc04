package sim

import (
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	upmodel "github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/policy"
	"github.com/sluice-gw/sluice/internal/sim/report"
)

// Mid-stream continuation, played as the gateway plays it
// (gateway/relay_continue.go), with the same core decisions: whether a
// break is mended (lifecycle.Mend), when a quiet stream is cut
// (lifecycle.StallDeadlineFor) and where it goes on
// (lifecycle.Engine.Continue, with the route's caps). A streamed answer
// that breaks after its first token (a reset after some tokens, a
// truncated answer) is not restarted, it is continued on the target the
// engine names, which
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
// and that the gateway would continue, by the core's rule
// (lifecycle.Mend) on the facts the simulator models (streamEnd). It
// records the break's cause for Engine.Continue.
func (r *run) midStream(c *upCall, first, end time.Duration) bool {
	if !r.sc.Clients.Stream || c.probe != 0 || c.q == nil || c.endKind == lifecycle.EndAnswered {
		return false
	}
	f, stop, ok := streamEnd(c, first, end)
	if !ok {
		return false
	}
	cause, mend := lifecycle.Mend(f, stop)
	c.cause = cause
	return mend
}

// streamEnd is what the gateway would have seen of c's stream when its
// read loop ends, and how it ends, as planned: a simulated answer is
// text (it plans no tool call), so the client has had text once a token
// went out before the end (first < end), and it breaks without its
// finish reason. ok is false for a plan that is not a break of a
// streamed answer after its first token (those end as before).
func streamEnd(c *upCall, first, end time.Duration) (lifecycle.StreamFacts, lifecycle.StreamStop, bool) {
	p := c.plan.Fail
	facts := lifecycle.StreamFacts{Text: first < end}
	if p == nil {
		return facts, 0, false
	}
	switch p.Kind {
	case upmodel.FailReset:
		return facts, lifecycle.StopCut, !p.Early()
	case upmodel.FailStall:
		if c.stallCut {
			return facts, lifecycle.StopStalled, true
		}
		// It resumed in time, then ended as its then says.
		switch p.Ending() {
		case upmodel.ThenReset, upmodel.ThenTruncate:
			return facts, lifecycle.StopCut, true
		case upmodel.ThenEOF:
			return facts, lifecycle.StopUnterminated, true
		}
	case upmodel.FailEOF:
		return facts, lifecycle.StopUnterminated, p.AfterTokens > 0
	case upmodel.FailTruncate:
		return facts, lifecycle.StopCut, p.AfterTokens > 0
	case upmodel.FailMalformed:
		return facts, lifecycle.StopMalformed, p.AfterTokens > 0
	}
	return facts, 0, false
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
// stream's gaps (stallCutAt), unless it resumes before that. It is cut
// whether or not anything can continue it: then the request fails there
// (continueFrom), cleanly, instead of waiting out the idle timeout. It
// reports whether the call is cut.
func (r *run) stallCut(c *upCall, f *upmodel.Failure, stream bool, first time.Duration, end *time.Duration) bool {
	at := min(f.AfterTokens, c.tokens)
	if !stream || c.q == nil || at <= 0 {
		return false
	}
	silentFrom := first + time.Duration(at-1)*c.tpot
	cut, watched := r.stallCutAt(silentFrom, c.tpot, at)
	if !watched || f.For > 0 && silentFrom+f.For <= cut {
		return false // it resumes in time
	}
	c.tokens, *end = at, cut
	c.endKind, c.status = lifecycle.EndBroken, http.StatusOK
	c.stallCut = true
	return true
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
	d := q.rep.eng.Continue(r.clock(r.now), q.id, c.cause, q.cont.caps, q.cont.done, false)
	if !d.OK || left <= 0 {
		r.endCont(q, nil)
		return
	}
	q.cont.caps[d.Target] = lifecycle.ContinueCaps{} // once per answer
	q.cont.done++
	slot := 1 - c.attempt
	scope := q.route.Targets[d.Target]
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
// in q's targets' order: its route's (lifecycle.Route.Continue, built by
// policy.FromConfig as the gateway's is), copied, since a continuation
// uses each target once.
func (r *run) contCaps(q *request) []lifecycle.ContinueCaps {
	return append([]lifecycle.ContinueCaps(nil), q.route.Continue...)
}

// stallCutAt is when the gateway cuts a stream that goes quiet after its
// nth token, which came at last, its tokens tpot apart: at the stall
// deadline the core derives from those gaps (lifecycle.StallDeadlineFor,
// the relay's own rule), never past the idle timeout. A stall fault of
// the upstream model breaks a stream there, and the break is continued
// like a cut (continueFrom). watched is false when the stall is not
// watched (then only the idle timeout ends it).
func (r *run) stallCutAt(last, tpot time.Duration, n int) (at time.Duration, watched bool) {
	d, watched := lifecycle.StallDeadlineFor(policy.Stall(r.cfg), lifecycle.Gaps{N: max(0, n-1), Mean: tpot}, n > 0)
	if !watched {
		return 0, false
	}
	if idle := r.cfg.Server.WithDefaults().StreamIdleTimeout.D(); idle > 0 {
		d = min(d, idle)
	}
	return last + d, true
}
