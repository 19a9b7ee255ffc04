package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// probeReadLimit bounds how much of a probe's answer is read: a one-token
// answer is a few hundred bytes.
const probeReadLimit = 64 << 10

// probeBody is a synthetic probe's request: the smallest answerable
// request of the provider's dialect, one output token, not streamed.
// max_tokens is the limit the Messages API and most OpenAI-compatible
// servers accept; OpenAI's reasoning models refuse it (400) and take
// max_completion_tokens instead, which the gateway then switches to for
// that provider.
func probeBody(model string, completionTokens bool) []byte {
	limit := "max_tokens"
	if completionTokens {
		limit = "max_completion_tokens"
	}
	b, _ := json.Marshal(map[string]any{
		"model":    model,
		limit:      1,
		"messages": []map[string]any{{"role": "user", "content": "ping"}},
	})
	return b
}

// probePath is where a dialect's probe goes, under the provider's base URL.
func probePath(d protocol.Dialect) string {
	if d == protocol.Anthropic {
		return "/messages"
	}
	return "/chat/completions"
}

// prober sends the breakers' synthetic probes (runner.Runner.SetProber).
type prober struct {
	byScope []*provider // by admission scope index
	// fleet, when the config names a store, says whether this replica
	// probes, and hears of a failed probe; nil outside a fleet.
	fleet   *fleet
	metrics *metrics.Metrics
	log     *slog.Logger
}

// probe sends one synthetic probe to scope's provider (see
// runner.Runner.SetProber) and says how it ended: an OK needs a 2xx
// with its whole (one-token) answer read before ctx's deadline.
func (pr *prober) probe(ctx context.Context, scope int) lifecycle.Outcome {
	p := pr.byScope[scope]
	if !pr.fleet.mayProbe(ctx, p) {
		// Another replica probes for the fleet; its verdict comes on the
		// fleet's channel. Cancelled: this breaker counts nothing.
		pr.metrics.Probes.WithLabelValues(p.name, "elsewhere").Inc()
		return lifecycle.Outcome{Kind: lifecycle.Cancelled}
	}
	o := pr.sendProbe(ctx, p)
	result := "ok"
	switch {
	case o.Kind == lifecycle.TimedOut:
		result = "timeout"
	case o.Kind == lifecycle.Cancelled:
		result = "cancelled"
	case o.Status == http.StatusTooManyRequests:
		result = "rate_limited"
	case o.Kind != lifecycle.OK:
		result = "error"
	}
	pr.metrics.Probes.WithLabelValues(p.name, result).Inc()
	if lifecycle.ProbeFailed(o) {
		pr.fleet.probeFailed(p)
	}
	switch {
	case o.Status/100 == 4 && o.Status != http.StatusTooManyRequests:
		// Not the provider's health: the probe itself is wrong, and the
		// provider stays out of rotation until it is fixed. Said once,
		// not once per probe.
		if p.probeWarned.CompareAndSwap(false, true) {
			pr.log.Warn("breaker probe rejected; set providers[].breaker.probe_model to a chat model this provider serves",
				"provider", p.name, "model", p.probeModel, "status", o.Status)
		}
	case o.Kind == lifecycle.OK:
		p.probeWarned.Store(false)
	}
	return o
}

func (pr *prober) sendProbe(ctx context.Context, p *provider) lifecycle.Outcome {
	o := pr.sendProbeOnce(ctx, p, p.probeCompletionTokens.Load())
	if o.Status == http.StatusBadRequest && p.dialect == protocol.OpenAI && !p.probeCompletionTokens.Load() {
		// Perhaps a reasoning model, which wants max_completion_tokens.
		if o2 := pr.sendProbeOnce(ctx, p, true); o2.Status != http.StatusBadRequest {
			p.probeCompletionTokens.Store(true)
			return o2
		}
	}
	return o
}

func (pr *prober) sendProbeOnce(ctx context.Context, p *provider, completionTokens bool) lifecycle.Outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.callURL(p.anyBase(), probePath(p.dialect), p.probeModel), bytes.NewReader(probeBody(p.probeModel, completionTokens)))
	if err != nil {
		return lifecycle.Outcome{Kind: lifecycle.Failed}
	}
	p.authorize(req.Header)
	req.Header.Set("X-Sluice-Probe", "1")
	resp, err := p.rt.RoundTrip(req)
	if err == nil {
		// The answer counts only once it is whole.
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, probeReadLimit))
		resp.Body.Close()
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return lifecycle.Outcome{Kind: lifecycle.TimedOut}
	case ctx.Err() != nil: // the gateway is shutting down: no verdict
		return lifecycle.Outcome{Kind: lifecycle.Cancelled}
	case err != nil && resp == nil:
		return lifecycle.Outcome{Kind: lifecycle.ConnError}
	case err != nil:
		return lifecycle.Outcome{Kind: lifecycle.Failed, Status: resp.StatusCode}
	}
	pr.metrics.UpstreamStatus.WithLabelValues(p.name, strconv.Itoa(resp.StatusCode)).Inc()
	if resp.StatusCode == http.StatusOK {
		return lifecycle.Outcome{Kind: lifecycle.OK, Status: resp.StatusCode}
	}
	return refusal(resp)
}
