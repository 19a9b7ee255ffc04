package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wait"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// calls is one admitted request's upstream calls (the forward stage):
// the first, and a second one the engine sends (a hedge, a rescue, a
// first-token call) or a retry, raced when the route races; the client
// gets the first usable answer, or else the last failure.
type calls struct {
	g        *Gateway
	call     *runner.Call
	w        http.ResponseWriter
	r        *http.Request
	x        *exchange
	m        *model
	ep       protocol.Endpoint
	body     *outgoing
	deadline time.Time
	// input is the request's input as counted (exact: in the model's
	// own encoding), choices the answers it asks for (at least 1): what
	// a call that lost a race is billed when its provider said nothing.
	input, choices int64
	exact          bool

	// The race (race): the calls in flight report on results; live
	// counts them; failed is a call that failed while another was in
	// flight, kept in case nothing better comes.
	results  chan *attempt
	attempts [2]*attempt
	live     int
	failed   *attempt
}

// forward makes the calls and answers the client from one of them.
func (c *calls) forward() {
	x, m := c.x, c.m
	x.cont = contState{call: c.call, m: m, out: c.body} // for a broken stream (relay_continue.go)
	// The text a stream's client has had is kept only when the stream
	// could be continued from it.
	x.cont.capture = x.contract == nil && m.continuable() && (c.ep.Name == "chat_completions" || c.ep.Name == "messages")
	first := newAttempt(c.g.metrics, c.call, 0, m.targets[c.call.Target])
	first.capture = x.cont.capture
	first.hold, x.spendHold = x.spendHold, nil
	x.attempts = 1
	if m.route.Races {
		c.race(first)
		return
	}
	a := first
	c.send(a)
	// A failed same-target retry may earn a call on the next target.
	for next := c.retry(a); next != nil; next = c.retry(a) {
		x.attempts++
		a = next
		c.send(a)
	}
	if a.resp != nil {
		c.call.Commit(a.n)
	}
	c.answer(a)
}

// answer gives the client a's answer, or its failure, and ends it.
func (c *calls) answer(a *attempt) {
	c.x.spendWinner, a.hold = a.hold, nil
	defer c.recordAnswer(a) // once relayed, on every path
	c.respond(a)
	c.call.End(a.n, outcomeOf(c.x))
	a.cancel()
	a.endAttemptSpan(c.x.outcome)
}

// race runs the first call and whatever second call the engine sends,
// each on its own goroutine, until one answers or every one has failed.
func (c *calls) race(first *attempt) {
	c.results = make(chan *attempt, 2)
	c.attempts = [2]*attempt{first}
	c.live = 1
	go c.run(first)
	for c.live > 0 {
		select {
		case hs := <-c.call.Seconds():
			c.second(hs)
		case a := <-c.results:
			c.live--
			if c.settled(a) {
				return
			}
		}
	}
	// Every call failed: the client gets the last failure.
	c.answer(c.failed)
}

// run makes call a on a goroutine of its own and reports it.
func (c *calls) run(a *attempt) {
	defer func() {
		// This goroutine is not the handler's, so nothing else would
		// recover a panic here: it would end the process.
		if v := recover(); v != nil {
			c.g.log.Error("upstream call panic", "panic", fmt.Sprint(v), "provider", a.t.provider.name)
			if a.resp != nil {
				a.resp.Body.Close()
			}
			a.resp, a.err = nil, fmt.Errorf("%w: %v", errAttemptPanic, v)
			a.release()
		}
		c.results <- a
	}()
	c.send(a)
}

// second launches the second call the engine sent, unless the key's
// spend limit refuses it (then it reports back at once as failed, and
// the first call goes on alone).
func (c *calls) second(hs lifecycle.SecondCall) {
	g, m, x := c.g, c.m, c.x
	h := newAttempt(g.metrics, c.call, 1, m.targets[hs.Target])
	h.capture = x.cont.capture
	c.attempts[1] = h
	if !g.spend.holdSecond(x, h) {
		h.err = errNoSpend
		c.live++
		c.results <- h
		return
	}
	x.attempts++
	switch hs.Kind {
	case lifecycle.Rescue:
		h.second = secondRescue
		g.metrics.Rescues.WithLabelValues(m.name, c.attempts[0].t.provider.name, h.t.provider.name).Inc()
	case lifecycle.FirstToken:
		h.second = secondFirstToken
		g.metrics.Hedges.WithLabelValues(m.name, "first_token").Inc()
	default:
		h.second = secondHedge
		g.metrics.Hedges.WithLabelValues(m.name, "fired").Inc()
	}
	c.live++
	go c.run(h)
}

// settled takes call a's report: a usable answer the engine commits is
// the client's (true); a failure waits for the other call, or for a
// second call or a retry, or is the client's when none comes.
func (c *calls) settled(a *attempt) bool {
	call := c.call
	if a.usable() && call.Commit(a.n) {
		if c.failed != nil {
			c.failed.discard(c, c.failed.outcome(call.Context()), false)
		}
		if c.live > 0 {
			// Cancel the loser now, so the cancel reaches its provider
			// at once; its goroutine reports back and is finished off
			// the request's path, and the request's log line waits for
			// its record.
			c.attempts[1-a.n].cancel()
			c.x.tally.expect()
			go func() {
				l := <-c.results
				l.discard(c, lifecycle.Outcome{Kind: lifecycle.Cancelled}, true)
				if c.x.tally.settled() {
					c.g.logRequest(c.x)
				}
			}()
		}
		if a.n == 1 {
			c.g.metrics.Hedges.WithLabelValues(c.m.name, "won").Inc()
		}
		c.answer(a)
		return true
	}
	if c.failed != nil {
		if c.failed.answered() && !a.answered() {
			// An invalid answer beats a failure: it is what the client
			// gets if nothing better comes.
			c.failed, a = a, c.failed
		}
		c.failed.discard(c, c.failed.outcome(call.Context()), false)
	}
	c.failed = a // wait for the other call, if there is one
	if c.live > 0 {
		return false
	}
	select {
	case hs := <-call.Seconds():
		// The engine sent a second call as this one failed.
		c.second(hs)
		return false
	default:
	}
	if next := c.retry(a); next != nil {
		c.x.attempts++
		c.failed, c.attempts[1] = nil, next
		c.live++
		go c.run(next)
	}
	return false
}

// send makes the upstream call and waits for its first byte.
func (c *calls) send(a *attempt) {
	g, r, ep, body, deadline := c.g, c.r, c.ep, c.body, c.deadline
	ctx := g.tracing.attempt(a, ep)
	a.creds = &c.x.creds
	req, err := upstreamRequest(ctx, r, a.t, a.base, ep, body, deadline, a.creds)
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

// retry asks the engine for a second call after a's failure, before any
// byte went to the client; the engine decides whether the request gets
// one (Engine.Retry: only a first call that failed alone, safely). It
// ends a and returns the new attempt, or nil.
func (c *calls) retry(a *attempt) *attempt {
	g, call, m := c.g, c.call, c.m
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
	a.discard(c, o, false)
	if delay > 0 {
		// A retry on the same provider waits out its Retry-After (or a
		// jittered backoff); a client that leaves meanwhile ends the wait,
		// and the new call then fails at once on its cancelled context.
		wait.Sleep(next.ctx, delay)
	}
	return next
}

// respond relays an attempt's answer, or maps its failure, to the client.
func (c *calls) respond(a *attempt) {
	g, call, w, r, x := c.g, c.call, c.w, c.r, c.x
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
	x.requestID = requestID(a.resp.Header, x.creds.scrubber())
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

// sayDropped names, on the answer of a translated target, the parameters
// translation dropped, in X-Sluice-Dropped and in one info line (names
// only: a parameter's value may be the client's content).
func sayDropped(log *slog.Logger, w http.ResponseWriter, x *exchange, a *attempt) {
	if x.cross == nil || x.cross.dropped == "" || !crossed(x, a) {
		return
	}
	w.Header().Set("X-Sluice-Dropped", x.cross.dropped)
	log.Info("translation dropped parameters the target's API cannot carry",
		"model", x.model, "provider", a.t.provider.name, "target_model", a.t.model,
		"from", x.endpoint.Dialect.String(), "to", a.t.provider.dialect.String(), "dropped", x.cross.dropped)
}
