package gateway

import (
	"context"
	"errors"
	"fmt"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wait"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// errAttemptPanic marks an attempt whose goroutine panicked.
var errAttemptPanic = errors.New("gateway: panic in an upstream call")

// errBadStream marks a stream that proved malformed, or ended without
// its terminator, before its first token: a failed call, safe to retry.
var errBadStream = errors.New("gateway: malformed stream")

// errNoSpend marks a second call not made: its key's spend limit could
// not take its reservation (spend.go).
var errNoSpend = errors.New("gateway: spend limit reached; second call not made")

// attempt is one upstream call of a request: its first call (n 0) or its
// hedge (n 1). It runs until its first byte, the response headers and,
// for a stream, the first chunk; only then is it committed, so a hedge
// race is decided by who answers first, and nothing is retried or hedged
// once a byte has gone to the client.
type attempt struct {
	n int
	// second is what made this call when it is the request's second:
	// hedge, rescue or retry (responseheaders.go).
	second string
	t      target
	// base is the API root the call goes to: its provider's, or the
	// replica's the engine picked in a pool.
	base    string
	ctx     context.Context
	cancel  context.CancelFunc
	start   time.Time
	firstAt time.Time
	resp    *http.Response
	// buf is a stream's relay buffer, taken from relayBufPool; its first
	// first bytes are the stream's head and first token, of which the
	// first ready are whole events, checked by check.
	buf   *[]byte
	first int
	ready int
	check protocol.StreamCheck
	// text is the text its check captures, from textPool, until the
	// relay takes it; capture says a continuation could go on from it.
	text    *[]byte
	capture bool
	err     error
	ep      protocol.Endpoint // the client's, which says how its streams end
	// span is the call's trace span; nil with tracing off (tracing.go).
	span trace.Span
	// checked: a whole answer read and checked against the request's
	// contract (readAnswer); invalid says why it failed, empty when it
	// held; unchecked says why it could not be judged (the check took
	// too long), and an unjudged answer is neither retried nor refused;
	// retryInvalid: an invalid answer is to be retried, so the call is
	// not usable.
	checked      bool
	invalid      string
	unchecked    string
	retryInvalid bool
	// hold is the call's spend reservation (spend.go), nil without
	// spend limits: settled when it loses, or when the request ends.
	hold *spendHold
	// whole is a whole answer's head, read before the call is
	// committed (readWhole); haveWhole says it was.
	whole     []byte
	haveWhole bool
}

// newAttempt makes an attempt, with a context of its own: a loser of a
// race, or a stream whose provider goes quiet, is cancelled alone.
func newAttempt(m *metrics.Metrics, call *runner.Call, n int, t target) *attempt {
	a := &attempt{n: n, t: t, base: t.provider.baseURL}
	a.ctx, a.cancel = context.WithCancel(call.Context())
	if p := t.provider; len(p.replicas) > 0 {
		if i, ok := call.Replica(n); ok && i < len(p.replicas) {
			a.base = p.replicas[i].baseURL
			m.ReplicaCalls.WithLabelValues(p.name, p.replicas[i].name).Inc()
		}
	}
	return a
}

// send makes the upstream call and waits for its first byte.
func (g *Gateway) send(a *attempt, r *http.Request, ep protocol.Endpoint, body *outgoing, deadline time.Time) {
	ctx := g.traceAttempt(a, ep)
	req, err := g.upstreamRequest(ctx, r, a.t, a.base, ep, body, deadline)
	if err != nil {
		a.err = err
		return
	}
	if a.span != nil {
		propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	a.ep = ep
	a.start = g.now()
	a.resp, a.err = a.t.provider.rt.RoundTrip(req)
	if a.err != nil {
		g.metrics.UpstreamStatus.WithLabelValues(a.t.provider.name, "error").Inc()
		return
	}
	g.metrics.UpstreamStatus.WithLabelValues(a.t.provider.name, strconv.Itoa(a.resp.StatusCode)).Inc()
	a.firstAt = g.now()
	switch {
	case a.resp.StatusCode == http.StatusOK && isEventStream(a.resp.Header):
		a.readHead(g.now)
	case body.contract != nil && a.resp.StatusCode/100 == 2:
		readAnswer(g.metrics, a, body)
	case a.resp.StatusCode/100 == 2 && isJSON(a.resp.Header):
		a.readWhole()
	}
}

// readHead reads a stream up to its first token, into the buffer the
// relay will use (so a stream holds one buffer for its life, not two).
// A provider may send its headers and a stream head (a role-only chunk,
// message_start) before it generates anything; the call has answered
// only once a token, or anything else past the head, has come. Until
// then it is not committed: a hedge can still win, and a cut is still a
// failure that is safe to retry. A head that fills the buffer, or a
// stream that ends cleanly, is taken as the answer. The client's headers
// wait for the first token too, as they waited for the first chunk.
//
// The stream is checked as it is read (protocol.StreamCheck): a first
// event that is not well-formed, or a stream that ends without its
// terminator before its first token, is a failed call too, and the
// client never sees it.
func (a *attempt) readHead(now func() time.Time) {
	a.buf = relayBufPool.Get().(*[]byte)
	a.check = protocol.NewStreamCheckFor(a.ep, a.t.provider.dialect)
	a.check.KeepMarks()
	if a.capture && a.t.provider.dialect == a.ep.Dialect {
		// The text the client will have, for a continuation: read as the
		// check reads each event, from the first.
		a.text = textPool.Get().(*[]byte)
		a.check.CaptureText(a.text)
	}
	buf := *a.buf
	for {
		n, err := a.resp.Body.Read(buf[a.first:])
		if n > 0 {
			b, ok, _ := a.check.Feed(buf[a.first : a.first+n])
			if !ok {
				a.failHead(errBadStream)
				return
			}
			if b >= 0 {
				a.ready = a.first + b
			}
		}
		a.first += n
		if a.check.Facts().Token || a.first == len(buf) {
			a.firstAt = now()
			return
		}
		if err == io.EOF && a.first > 0 {
			// A whole stream that ended before any event was past the
			// head is an answer, if it ended properly.
			if a.check.End() != protocol.StreamOK {
				a.failHead(errBadStream)
				return
			}
			a.firstAt = now()
			return
		}
		if err != nil {
			// Cut before the first token: a failed call, still safe to
			// hedge or fail over.
			a.failHead(errOrEOF(err))
			return
		}
	}
}

// failHead ends a stream that failed before its first token.
func (a *attempt) failHead(err error) {
	a.resp.Body.Close()
	a.resp, a.err = nil, err
	a.first, a.ready = 0, 0
	a.release()
}

// release returns the attempt's relay buffer, and what its check held.
func (a *attempt) release() {
	if a.buf != nil {
		relayBufPool.Put(a.buf)
		a.buf = nil
	}
	if a.text != nil {
		*a.text = (*a.text)[:0]
		textPool.Put(a.text)
		a.text = nil
	}
	a.check.Release()
}

func errOrEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// usable: the call answered 2xx (a stream, with its first chunk), and
// not with an answer that failed validation and is to be retried.
func (a *attempt) usable() bool {
	return a.err == nil && a.resp.StatusCode/100 == 2 && (a.invalid == "" || !a.retryInvalid)
}

// answered: the call has an answer to relay, usable or not.
func (a *attempt) answered() bool { return a.err == nil && a.resp != nil && a.resp.StatusCode/100 == 2 }

// outcome classifies an attempt that is not relayed to the client.
func (a *attempt) outcome(callCtx context.Context) lifecycle.Outcome {
	return a.ending(callCtx).Outcome()
}

// ending is how an attempt that is not relayed to the client ended, in
// the engine's terms (lifecycle.Ending).
func (a *attempt) ending(callCtx context.Context) lifecycle.Ending {
	switch {
	case errors.Is(a.err, errNoSpend):
		return lifecycle.Ending{Kind: lifecycle.EndAbandoned} // no call, no verdict on its provider
	case a.err == nil:
		e := lifecycle.Ending{Kind: lifecycle.EndRefused, Status: a.resp.StatusCode, RetryAfter: retryAfter(a.resp.Header), Responses: a.ep.IsResponses()}
		switch {
		case a.resp.StatusCode/100 == 2 && a.invalid != "":
			e.Kind = lifecycle.EndInvalid
		case a.resp.StatusCode/100 == 2:
			e.Kind = lifecycle.EndAnswered
		}
		return e
	case timedOut(callCtx):
		return lifecycle.Ending{Kind: lifecycle.EndDeadline}
	case a.ctx.Err() != nil:
		return lifecycle.Ending{Kind: lifecycle.EndAbandoned}
	}
	return lifecycle.Ending{Kind: lifecycle.EndUnreachable}
}

// discard ends an attempt whose answer the client will not get.
func (a *attempt) discard(call *runner.Call, s *spender, o lifecycle.Outcome) {
	s.settleLoser(a)
	a.cancel()
	a.endAttemptSpan(o.Kind.String())
	if a.resp != nil {
		a.resp.Body.Close()
	}
	a.release()
	call.End(a.n, o)
}

// forward makes the request's upstream calls and relays the winner's
// answer. Without hedging there is one call, made on this goroutine.
// With it, the first call runs on its own goroutine; if the engine sends
// a hedge (Call.Hedges), the two race, the first usable answer to commit
// goes to the client, and the other is cancelled.
func (g *Gateway) forward(call *runner.Call, w http.ResponseWriter, r *http.Request, x *exchange, m *model, ep protocol.Endpoint, body *outgoing, deadline time.Time) {
	races := m.route.Races
	x.cont = contState{call: call, m: m, out: body} // for a broken stream (relay_continue.go)
	// The text a stream's client has had is kept only when the stream
	// could be continued from it.
	x.cont.capture = x.contract == nil && m.continuable() && (ep.Name == "chat_completions" || ep.Name == "messages")
	first := newAttempt(g.metrics, call, 0, m.targets[call.Target])
	first.capture = x.cont.capture
	first.hold, x.spendHold = x.spendHold, nil
	x.attempts = 1
	if !races {
		a := first
		g.send(a, r, ep, body, deadline)
		// A failed same-target retry may earn a call on the next target.
		for next := g.retry(call, m, a); next != nil; next = g.retry(call, m, a) {
			x.attempts++
			a = next
			g.send(a, r, ep, body, deadline)
		}
		if a.resp != nil {
			call.Commit(a.n)
		}
		x.spendWinner, a.hold = a.hold, nil
		g.respond(call, w, r, x, a)
		call.End(a.n, outcomeOf(x))
		a.cancel()
		a.endAttemptSpan(x.outcome)
		return
	}
	results := make(chan *attempt, 2)
	run := func(a *attempt) {
		defer func() {
			// This goroutine is not the handler's, so nothing else would
			// recover a panic here: it would end the process.
			if v := recover(); v != nil {
				g.log.Error("upstream call panic", "panic", fmt.Sprint(v), "provider", a.t.provider.name)
				if a.resp != nil {
					a.resp.Body.Close()
				}
				a.resp, a.err = nil, fmt.Errorf("%w: %v", errAttemptPanic, v)
				a.release()
			}
			results <- a
		}()
		g.send(a, r, ep, body, deadline)
	}
	go run(first)
	attempts := [2]*attempt{first}
	live := 1
	second := func(hs lifecycle.SecondCall) {
		h := newAttempt(g.metrics, call, 1, m.targets[hs.Target])
		h.capture = x.cont.capture
		attempts[1] = h
		if !g.spend.holdSecond(x, h) {
			// Not made: it reports back at once as failed, and the
			// first call goes on alone.
			h.err = errNoSpend
			live++
			results <- h
			return
		}
		x.attempts++
		switch hs.Kind {
		case lifecycle.Rescue:
			h.second = secondRescue
			g.metrics.Rescues.WithLabelValues(m.name, first.t.provider.name, h.t.provider.name).Inc()
		case lifecycle.FirstToken:
			h.second = secondFirstToken
			g.metrics.Hedges.WithLabelValues(m.name, "first_token").Inc()
		default:
			h.second = secondHedge
			g.metrics.Hedges.WithLabelValues(m.name, "fired").Inc()
		}
		live++
		go run(h)
	}
	var failed *attempt
	for live > 0 {
		select {
		case hs := <-call.Seconds():
			second(hs)
		case a := <-results:
			live--
			if a.usable() && call.Commit(a.n) {
				if failed != nil {
					failed.discard(call, g.spend, failed.outcome(call.Context()))
				}
				if live > 0 {
					// Cancel the loser now, so the cancel reaches its
					// provider at once; its goroutine reports back and is
					// finished off the request's path.
					attempts[1-a.n].cancel()
					go func() { l := <-results; l.discard(call, g.spend, lifecycle.Outcome{Kind: lifecycle.Cancelled}) }()
				}
				if a.n == 1 {
					g.metrics.Hedges.WithLabelValues(m.name, "won").Inc()
				}
				x.spendWinner, a.hold = a.hold, nil
				g.respond(call, w, r, x, a)
				call.End(a.n, outcomeOf(x))
				a.cancel()
				a.endAttemptSpan(x.outcome)
				return
			}
			if failed != nil {
				if failed.answered() && !a.answered() {
					// An invalid answer beats a failure: it is what the
					// client gets if nothing better comes.
					failed, a = a, failed
				}
				failed.discard(call, g.spend, failed.outcome(call.Context()))
			}
			failed = a // wait for the other call, if there is one
			if live == 0 {
				select {
				case hs := <-call.Seconds():
					// The engine sent a second call as this one failed.
					second(hs)
					continue
				default:
				}
				if next := g.retry(call, m, a); next != nil {
					x.attempts++
					failed, attempts[1] = nil, next
					live++
					go run(next)
				}
			}
		}
	}
	// Every call failed: the client gets the last failure.
	x.spendWinner, failed.hold = failed.hold, nil
	g.respond(call, w, r, x, failed)
	call.End(failed.n, outcomeOf(x))
	failed.cancel()
	failed.endAttemptSpan(x.outcome)
}

// retry asks the engine for a second call after a's failure, before any
// byte went to the client; the engine decides whether the request gets
// one (Engine.Retry: only a first call that failed alone, safely). It
// ends a and returns the new attempt, or nil.
func (g *Gateway) retry(call *runner.Call, m *model, a *attempt) *attempt {
	if a.usable() {
		return nil // the client gets this answer: nothing failed
	}
	o := a.outcome(call.Context())
	rc, ok := call.RetryCall(o)
	if !ok {
		return nil
	}
	ti, delay := rc.Target, rc.Delay
	next := newAttempt(g.metrics, call, 1, m.targets[ti])
	next.capture = a.capture
	// The failed call cost nothing (it failed before its first byte); its
	// reservation goes with the retry.
	next.hold, a.hold = a.hold, nil
	next.second = saidRetry[rc.Why]
	g.metrics.Retries.WithLabelValues(m.name, next.t.provider.name).Inc()
	a.discard(call, g.spend, o)
	if delay > 0 {
		// A retry on the same provider waits out its Retry-After (or a
		// jittered backoff); a client that leaves meanwhile ends the wait,
		// and the new call then fails at once on its cancelled context.
		wait.Sleep(next.ctx, delay)
	}
	return next
}

// refusal classifies an upstream answer that is not a usable one: the
// provider said it is at capacity (429, 503, 529), or failed otherwise,
// with its Retry-After either way.
func refusal(resp *http.Response) lifecycle.Outcome {
	return lifecycle.StatusOutcome(resp.StatusCode, retryAfter(resp.Header))
}

// respond relays an attempt's answer, or maps its failure, to the client.
func (g *Gateway) respond(call *runner.Call, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt) {
	// The answer is priced, logged and traced as the target that gave it
	// (a hedge's, a rescue's or a retry's), not the first one.
	x.provider, x.upstreamModel = a.t.provider.name, a.t.model
	x.second = a.second
	x.upstreamStart = a.start
	g.tell.set(w.Header(), x, a)
	switch {
	case errors.Is(a.err, errAttemptPanic):
		x.fail(w, protocol.Internal, outcomeInternal, "panic", "internal error in the gateway", 0)
		return
	case errors.Is(a.err, errBadStream):
		x.upstreamDur = g.now().Sub(a.start)
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent a malformed stream", x.provider), 0)
		return
	case errors.Is(a.err, errBadAnswer):
		x.upstreamDur = g.now().Sub(a.start)
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent a malformed response", x.provider), 0)
		return
	case a.err != nil:
		g.upstreamFailed(w, r, x, call.Context(), a.err)
		return
	}
	x.upstreamStatus = a.resp.StatusCode
	x.requestID = requestID(a.resp.Header, a.t.provider.scrub)
	if judged(x, a, x.onInvalid) {
		refuseInvalid(w, x, a, g.now())
		return
	}
	sayDropped(g.log, w, x, a)
	sayNativeDropped(w, x, a)
	switch {
	case a.buf != nil:
		x.ttft = a.firstAt.Sub(a.start)
		g.relayStream(call.Context(), w, r, x, a)
	case a.resp.StatusCode/100 == 2:
		g.relayWhole(call.Context(), w, r, x, a)
	default:
		g.relayRefusal(call.Context(), w, r, x, a)
	}
}
