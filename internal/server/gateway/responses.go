package gateway

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// OpenAI's Responses API (POST /v1/responses) is passed through as it is
// to the targets whose provider serves it (providers[].responses, on by
// default for kind openai), and never translated: its stateful features
// (previous_response_id, stored responses, built-in tools) have no
// Anthropic counterpart. Everything else is as for chat: admission,
// budgets (input counted from input and instructions, the output
// reserved from max_output_tokens), metrics, breakers, failover among
// those targets. Its streams end with response.completed (or
// .incomplete, .failed) rather than [DONE] (protocol.NewStreamCheckFor).
//
// A model none of whose targets serves it is refused with a 400 in
// OpenAI's shape, naming model. A provider that answers 404 (configured
// as serving it, but without the endpoint) has the 404 relayed, is
// logged once, and is not held against its breaker: one client's choice
// of endpoint must not take a provider out of rotation for everyone.

// responsesTargets returns m with only the targets that serve the
// Responses API, or answers the client's 400 when there are none.
func (g *Gateway) responsesTargets(w http.ResponseWriter, x *exchange, m *model) (*model, bool) {
	kept := m.keep(func(t target) bool { return t.provider.responses.Load() })
	if len(kept.targets) > 0 {
		return kept, true
	}
	var names []string
	for _, t := range m.targets {
		names = append(names, t.provider.name)
	}
	g.failParam(w, x, protocol.InvalidRequest, outcomeClientError, "no_responses_target",
		fmt.Sprintf("model %q cannot be served through the Responses API: none of its providers (%s) serves /v1/responses, which Sluice passes through but does not translate; call /v1/chat/completions instead, or set responses: true on an OpenAI-kind provider that has it",
			m.name, strings.Join(names, ", ")), "model", 0)
	return m, false
}

// keep returns m with only the targets for which ok is true; m itself
// when all are kept.
func (m *model) keep(ok func(target) bool) *model {
	all := true
	for _, t := range m.targets {
		all = all && ok(t)
	}
	if all {
		return m
	}
	// A copy keeps every setting of the model; only its targets narrow.
	c := *m
	kept := &c
	kept.targets, kept.route.Targets, kept.route.Models, kept.route.Continue = nil, nil, nil, nil
	for i, t := range m.targets {
		if ok(t) {
			kept.targets = append(kept.targets, t)
			kept.route.Targets = append(kept.route.Targets, m.route.Targets[i])
			kept.route.Models = append(kept.route.Models, m.route.Models[i])
			kept.route.Continue = append(kept.route.Continue, m.route.Continue[i])
		}
	}
	// The continuation caps are indexed as the request's targets are.
	kept.caps = kept.route.Continue
	return kept
}

// warnNoResponses logs, once per provider, that it answered 404 to the
// Responses API.
func (g *Gateway) warnNoResponses(p *provider) {
	if p.responsesWarned.CompareAndSwap(false, true) {
		g.log.Warn("provider answered 404 to /v1/responses; if it has no Responses API, set responses: false on it",
			"provider", p.name)
	}
}
