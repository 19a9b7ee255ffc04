package gateway

import (
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Context overflow routing (lifecycle/context.go decides; this carries
// it out). A request whose prompt is too long for its model goes to the
// model's context_fallback as a request for that model: before the call
// when the model's context_window is known and the prompt was counted,
// or after a provider refused it as too long, while nothing has reached
// the client. Each hop is admitted and routed anew; the chain is bounded
// by the number of models.

// overflow sends a counted request to its model's context fallback
// before any call, when it does not fit m's context window and the
// fallback can serve the client.
func (h *hop) overflow() bool {
	name, ok := h.m.route.Overflows(h.req)
	if !ok {
		return true
	}
	h.next = contextTarget(h.g.models, h.x, name)
	return h.next == nil
}

// contextRefused reports whether a provider's error (status and body, in
// p's dialect, read bounded) refused the request's prompt as too long,
// and the route sends the request to its fallback: then the exchange
// records where, and the error is not relayed.
func contextRefused(models map[string]*model, x *exchange, p *provider, status int, data []byte) bool {
	if x.contextRoute == nil || x.wroteHeader || !protocol.ContextExceeded(p.dialect, status, data) {
		return false
	}
	name, ok := x.contextRoute.ContextReroute(lifecycle.Ending{Kind: lifecycle.EndRefused, Status: status, ContextExceeded: true})
	if !ok {
		return false
	}
	next := contextTarget(models, x, name)
	if next == nil {
		return false
	}
	x.contextNext = next
	x.outcome, x.reason = outcomeUpstreamError, "context_length_exceeded"
	return true
}

// contextTarget is the fallback model named, if the client may use it
// through its endpoint: the fallback's targets speak the client's API
// or can be translated to, and the client's key allows the model. The
// Responses API, whose targets are chosen apart, is not rerouted.
func contextTarget(models map[string]*model, x *exchange, name string) *model {
	m := models[name]
	ep := x.endpoint
	switch {
	case m == nil, ep.IsResponses():
		return nil
	case !translates(ep) && !m.speaks(ep.Dialect):
		return nil
	case x.key != nil && x.key.models != nil && !x.key.models[name]:
		return nil
	}
	return m
}
