package gateway

import (
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// degradeStage serves the request in a cheaper way when
// lifecycle.Degrade says so.
func (h *hop) degradeStage() bool {
	if dg := lifecycle.Degrade(h.req, h.g.degradeAsk(h.x, h.m.route.Degrade)); dg != (lifecycle.Degrading{}) {
		h.degrade(dg)
		h.x.inputTokens = h.req.InputTokens
	}
	return true
}

// degrade serves a background request in the cheaper way
// lifecycle.Degrade decided: another model, a lower max_tokens, a
// trimmed history. It sets the hop's model and engine request to serve
// it with, and marks the answer with X-Sluice-Degraded.
func (h *hop) degrade(dg lifecycle.Degrading) {
	g, x, m, req, out := h.g, h.x, h.m, h.req, h.out
	defer func() { h.m, h.req = m, req }()
	var notes []string
	if to, ok := g.models[dg.To]; ok && dg.To != "" {
		m = to
		notes = append(notes, "model="+m.name)
	} else {
		dg.To = ""
	}
	req = dg.Apply(req, m.route, x.start, h.clientTimeout)
	if dg.MaxOutput > 0 {
		out.edit.MaxTokens = dg.MaxOutput
		notes = append(notes, "max_tokens="+strconv.FormatInt(dg.MaxOutput, 10))
	}
	if dg.TrimTo > 0 {
		if msgs, dropped, n := g.counts.trim(m, x.endpoint.Dialect, out.body, req.InputTokens, dg.TrimTo); dropped > 0 {
			out.edit.Messages = msgs
			req.InputTokens = n
			req.Degraded = true
			notes = append(notes, "trimmed_messages="+strconv.Itoa(dropped))
		}
	}
	if len(notes) == 0 {
		return
	}
	x.degraded = strings.Join(notes, ",")
	x.model = m.name
	h.w.Header().Set("X-Sluice-Degraded", x.degraded)
	g.metrics.Degraded.WithLabelValues(x.requested, m.name).Inc()
}

// degradeAsk is what the gateway knows of x, a request of a model with
// Degradation d, for lifecycle.Degrade.
func (g *Gateway) degradeAsk(x *exchange, d *lifecycle.Degradation) lifecycle.DegradeAsk {
	return lifecycle.DegradeAsk{Degrade: d, KeyOptsOut: x.key != nil && !x.key.mayDegrade, Shared: g.lastShared(x), Pressure: g.runner.ShouldDegrade}
}

// lastShared is the budget of x's key as the fleet's store last reported
// it, when the store keeps it (lifecycle.DegradeAsk.Shared): read from
// this replica's last take or settle, without another round trip.
func (g *Gateway) lastShared(x *exchange) *[3]quota.Status {
	if !g.shares(x) {
		return nil
	}
	v, ok := g.fleet.status.Load(x.key.name)
	if !ok {
		return nil
	}
	st := v.([3]quota.Status)
	return &st
}
