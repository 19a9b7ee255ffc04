package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// The request side is a chain of stages, run in the order of
// requestStages, in the manner of Envoy's decoder filters (the relay's
// filters, relay_filter.go, are the answer side's). Each stage reads
// what the stages before it wrote, and writes its own part of the
// exchange and of the hop. What a stage takes (a budget's hold, a spend
// reservation, an admission slot) its end releases when the hop ends, on
// every path, panics included: the ends of the stages that ran, the last
// first. A stage that answers the client (a refusal) or hands the
// request to another model stops the chain.
//
// The work before admission is ordered by cost, cheapest refusal first
// (lifecycle/screen.go): the key's budget at the request's floor, before
// its tokens are counted; the budgets with the count, before its body
// is translated for a target of the other API; the fleet's shared
// budget, a round trip, before translation too. A request its budget
// refuses costs a parse of its body, never a count or a translation.
//
// A new check is a new stage: a type's method of the form
// func(*hop) bool, and a line in the table.

// stage is one step of the request side.
type stage struct {
	name string
	// reads is what it reads that earlier stages wrote; writes, what it
	// writes (the exchange's parts, exchange.go, or the hop's fields).
	reads, writes string
	// run does the stage's work: false when it answered the client or
	// sent the request to another model, and the chain stops.
	run func(*hop) bool
	// end, when set, releases what run took; it runs when the hop ends
	// if run did, whatever run returned, and must be a no-op when run
	// took nothing.
	end func(*hop)
}

// requestStages is the request side's order. TestStageTable prints it,
// and docs/ARCHITECTURE.md shows it.
var requestStages = [...]stage{
	{"floor", "who", "record (a refusal)", (*hop).screenFloor, nil},
	{"count", "m", "budgetHold.inputTokens, req.InputTokens", (*hop).count, nil},
	{"overflow", "budgetHold", "next", (*hop).overflow, nil},
	{"degrade", "who, budgetHold", "m, req, out.edit, routeState.degraded", (*hop).degradeStage, nil},
	{"screen", "who, budgetHold, req", "record (a refusal)", (*hop).screen, nil},
	{"contract", "m, out", "contractState, out.contract", (*hop).contractOf, nil},
	{"shared", "who, req", "budgetHold.shared*", (*hop).takeShared, (*hop).settleShared},
	{"spend", "who, m, req", "spendState", (*hop).reserveSpend, (*hop).settleSpend},
	{"adapt", "m, out", "m, req, out.cross, out.nativeCalls, routeState.cross", (*hop).adapt, nil},
	{"acquire", "req", "ctx, call, upstreamState", (*hop).acquire, (*hop).release},
	{"forward", "everything above", "upstreamState, relayState, record, next", (*hop).forward, nil},
}

// generateOnce is serve's path once the request is known: the stages,
// into w with r's context: the client's, or, for an idempotent request's
// leader, its flight's. It returns the model the request goes to
// instead, when its prompt is too long for m (contextroute.go), having
// written nothing to the client; else nil.
func (g *Gateway) generateOnce(w http.ResponseWriter, r *http.Request, x *exchange, m *model, body *protocol.Body, clientTimeout time.Duration) *model {
	h := newHop(g, w, r, x, m, body, clientTimeout)
	runStages(h, requestStages[:])
	return h.next
}

// runStages runs stages in order on h until one stops the chain, then
// the ends of those that ran, the last first, on every path.
func runStages(h *hop, stages []stage) {
	ran := 0
	defer func() {
		for i := ran - 1; i >= 0; i-- {
			if end := stages[i].end; end != nil {
				end(h)
			}
		}
	}()
	for ran < len(stages) {
		ran++
		if !stages[ran-1].run(h) {
			return
		}
	}
}

// newHop starts a hop of x on m: the engine's request, and what the
// upstream calls send, before any stage has changed them.
func newHop(g *Gateway, w http.ResponseWriter, r *http.Request, x *exchange, m *model, body *protocol.Body, clientTimeout time.Duration) *hop {
	ep := x.endpoint
	h := &hop{g: g, w: w, r: r, x: x, m: m, body: body, clientTimeout: clientTimeout}
	h.req = m.route.Request(x.priority, body.Stream, x.start, clientTimeout)
	h.req.MaxOutput, h.req.Choices = body.MaxTokens, protocol.Choices(ep, body.Raw()) // n answers reserve n x max_tokens
	if !ep.Streams {
		h.req.MaxOutput = lifecycle.NoOutput // embeddings generate no tokens
	}
	x.namedMax, x.choices = body.MaxTokens > 0, max(h.req.Choices, 1)
	if x.key != nil {
		h.req.Key = x.key.index
	}
	h.outBuf = outgoing{body: body, client: ep.Dialect}
	h.out = &h.outBuf
	if ep.IsResponses() {
		// degrade's cap, on a body without one, goes in its own field.
		h.out.edit.MaxTokensField = "max_output_tokens"
	}
	// (The Responses API reports usage on its own, and has no
	// include_usage.)
	if body.Stream && ep.Streams && ep.Dialect == protocol.OpenAI && !body.StreamOptions && !ep.IsResponses() {
		// Ask for the stream's usage, to settle the key's budget and
		// record the usage and its cost with the provider's count
		// (cached input included); the client, which did not ask, does
		// not see it.
		h.out.edit.IncludeUsage, x.injectedUsage = true, true
	}
	return h
}

// screenFloor screens the key's budget at the request's floor, before
// its tokens are counted (lifecycle.Floor).
func (h *hop) screenFloor() bool { return h.screened(lifecycle.Floor(h.req)) }

// screen screens the request's budgets with its tokens counted.
func (h *hop) screen() bool { return h.screened(h.req) }

// screened reports whether req passes its budgets' screen
// (lifecycle.Engine.Screen); refused, it is answered as Acquire's
// refusal would be, with the key's rate-limit headers.
func (h *hop) screened(req lifecycle.Request) bool {
	rej := h.g.runner.Screen(req)
	if rej == nil {
		return true
	}
	h.g.setRateHeaders(h.w.Header(), h.x)
	refuse(h.g.metrics, h.w, h.x, rej, req.Deadline)
	return false
}

// acquire waits for the engine to admit the request, within its
// deadline.
func (h *hop) acquire() bool {
	g, w, x := h.g, h.w, h.x
	deadline := h.req.Deadline
	h.ctx, h.cancel = context.WithDeadline(h.r.Context(), deadline)
	call, err := g.runner.Acquire(h.ctx, h.req)
	g.setRateHeaders(w.Header(), x)
	if err != nil {
		var rej *admission.Rejection
		switch {
		case errors.As(err, &rej):
			refuse(g.metrics, w, x, rej, deadline)
		case h.r.Context().Err() != nil:
			g.clientGone(w, h.r, x)
		default:
			x.fail(w, protocol.Timeout, outcomeTimeout, "queue_deadline",
				fmt.Sprintf("the request's %s deadline passed while it waited for admission", deadline.Sub(x.start).Round(time.Millisecond)), 0)
		}
		return false
	}
	h.call = call
	x.admitted = true
	x.outputLimit = call.OutputLimit
	x.waited = call.Waited
	t := h.m.targets[call.Target]
	x.provider, x.upstreamModel = t.provider.name, t.model
	if call.Target > 0 {
		g.metrics.Failovers.WithLabelValues(h.m.name, t.provider.name).Inc()
	}
	if x.waited > 0 {
		g.metrics.QueueWait.WithLabelValues(x.priority.String()).Observe(x.waited.Seconds())
	}
	return true
}

// release ends what acquire took. Whatever path ends the hop, its slot
// is released exactly once; forward reports the real outcomes first, and
// these are then no-ops. The hedge is ended too (a panic mid-race would
// otherwise leave the request waiting for it, its slot held).
func (h *hop) release() {
	if h.call != nil {
		h.call.FinishSecond(lifecycle.Outcome{Kind: lifecycle.Cancelled})
		h.call.Finish(lifecycle.Outcome{Kind: lifecycle.Cancelled})
	}
	if h.cancel != nil {
		h.cancel()
	}
}

// forward makes the upstream calls and relays the answer; a provider's
// refusal of the prompt as too long names the model it goes on to.
func (h *hop) forward() bool {
	h.x.contextRoute = &h.m.route
	c := calls{g: h.g, call: h.call, w: h.w, r: h.r, x: h.x, m: h.m, ep: h.x.endpoint, body: h.out, deadline: h.req.Deadline,
		input: h.req.InputTokens, exact: h.x.exactCount, choices: max(h.req.Choices, 1)}
	c.forward()
	h.next = h.x.contextNext
	return true
}

// generate runs the request on m, then on each context fallback it is
// sent to.
func (g *Gateway) generate(w http.ResponseWriter, r *http.Request, x *exchange, m *model, body *protocol.Body, clientTimeout time.Duration) {
	for hops := 0; m != nil; hops++ {
		next := g.generateOnce(w, r, x, m, body, clientTimeout)
		if next == nil || hops >= len(g.models) {
			return
		}
		g.log.Debug("context fallback", "from", m.name, "to", next.name, "input_tokens", x.inputTokens)
		// The next hop is a new request for the fallback model: the
		// record keeps what the client asked for and the calls made.
		x.model = next.name
		x.admitted, x.contextNext, x.contextRoute = false, nil, nil
		x.outcome, x.reason, x.upstreamStatus, x.retryAfter = "", "", 0, 0
		m = next
	}
}
