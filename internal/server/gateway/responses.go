package gateway

import (
	"log/slog"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// OpenAI's Responses API (POST /v1/responses) is passed through as it is
// to a model whose targets all serve it (providers[].responses, on by
// default for kind openai), and bridged through chat completions for
// any other (responses_bridge.go). Passed through, everything else is as
// for chat: admission, budgets (input counted from input and
// instructions, the output reserved from max_output_tokens), metrics,
// breakers, failover among those targets. Its streams end with
// response.completed (or .incomplete, .failed) rather than [DONE]
// (protocol.NewStreamCheckFor).
//
// A provider that answers 404 (configured as serving it, but without
// the endpoint) has the 404 relayed, is logged once, and is not held
// against its breaker: one client's choice of endpoint must not take a
// provider out of rotation for everyone.

// streamErrorEvent is Sluice's own error event, in the client's API,
// for a stream that breaks after its headers went out: a Responses API
// stream's numbered after the last event relayed.
func (x *exchange) streamErrorEvent(k protocol.Kind, msg string) []byte {
	if !x.endpoint.IsResponses() {
		return x.endpoint.Dialect.StreamErrorEvent(k, msg)
	}
	var seq int64
	if x.relayed != nil {
		seq = x.relayed.Facts().NextSeq
	}
	return protocol.ResponsesStreamErrorEvent(k, msg, seq)
}

// keep is m with only the targets ok keeps (lifecycle.Route.Eligible);
// m itself when all are kept.
func (m *model) keep(ok func(target) bool) *model {
	fits := make([]lifecycle.Fit, len(m.targets))
	for i, t := range m.targets {
		if !ok(t) {
			fits[i].Why = "left out"
		}
	}
	if route, _, _ := m.route.Eligible(fits); len(route.Targets) < len(m.targets) {
		return m.narrowed(route, fits)
	}
	return m
}

// warnNoResponses logs, once per provider, that it answered 404 to the
// Responses API.
func (p *provider) warnNoResponses(log *slog.Logger) {
	if p.responsesWarned.CompareAndSwap(false, true) {
		log.Warn("provider answered 404 to /v1/responses; if it has no Responses API, set responses: false on it",
			"provider", p.name)
	}
}
