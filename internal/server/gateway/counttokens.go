package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// countTokensTimeout bounds a count_tokens call to a provider; past it
// the gateway's own count answers instead.
const countTokensTimeout = 5 * time.Second

// countTokensInFlight caps the count_tokens calls a provider has from
// this gateway at once. Counts take no admission slot and no budget, so
// without a cap one client asking for counts in a loop would spend the
// gateway's account with the provider (its rate limits) for everybody's
// generations; past the cap, the tokenizer counts.
const countTokensInFlight = 4

// countSlots bounds the count_tokens requests this process parses and
// counts at once: a quarter of its CPUs, at least one. Counting takes no
// admission slot (nothing upstream is spent), so without a bound a client
// counting in a loop took every core, and other clients' chat answers
// waited for them (their p50 rose from 1.1 to 59 ms). Past the bound a
// count waits at most countTokensWait for a slot, then is refused (503,
// or 529 on Anthropic's API) with a Retry-After of a second. A slot is
// not held while the body is read, nor during the provider's own count.
var countSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/4))

// countTokensWait is how long a count waits for a CPU slot.
const countTokensWait = 100 * time.Millisecond

// countSlot takes a CPU slot for counting, waiting at most
// countTokensWait; false when none freed.
func countSlot() bool {
	select {
	case countSlots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(countTokensWait)
	defer t.Stop()
	select {
	case countSlots <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

// serveCountTokens answers Anthropic's POST /v1/messages/count_tokens.
// When the model's first target is an Anthropic-kind provider (and its
// breaker is not open), the count is that provider's own, from its
// count_tokens endpoint, with the target's model, the provider's key and
// X-Sluice-Token-Count: provider. Otherwise, or when that call fails in
// any way (no answer within countTokensTimeout, a non-2xx status, a body
// without input_tokens), the count is Sluice's own, from its tokenizer in
// the encoding of the model's first target (see counting.input): the count
// the gateway charges against budgets, with X-Sluice-Token-Count: exact
// or estimated (Claude's tokenizer is not public, so a Claude model's
// own count is always an estimate). A count spends nothing of a key's
// budgets, and takes no admission slot; parsing and counting it take one
// of countSlots, the CPU share counting has.
func (g *Gateway) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	x := &exchange{start: g.now(), writeTimeout: g.writeTimeout, endpoint: protocol.Endpoint{Name: "count_tokens", Path: r.URL.Path, Dialect: protocol.Anthropic}}
	x.priority = g.defaultPri
	defer g.finish(x)
	if !g.keys.authenticate(w, r, x) {
		return
	}
	raw, held, err := g.intake.read(w, r, g.intake.sourceOf(r, x))
	defer g.intake.bodies.give(held)
	if err != nil {
		g.bodyFailed(w, r, x, err)
		return
	}
	// Parsing and counting take CPU, within countSlots.
	holding := false
	defer func() {
		if holding {
			<-countSlots
		}
	}()
	take := func() bool {
		if holding = countSlot(); !holding {
			x.fail(w, protocol.Overloaded, outcomeShed, "count_tokens_cpu",
				"the gateway is counting as many requests' tokens as it gives counting; retry in a second", time.Second)
		}
		return holding
	}
	if !take() {
		return
	}
	m, body, ok := g.modelOf(w, x, raw)
	if !ok {
		return
	}
	x.outcome, x.status = outcomeOK, http.StatusOK
	x.borrowed = true // a count spends no tokens: nothing to account
	n, count := int64(0), ""
	// A native provider's count is never asked for: its API's count is
	// not Anthropic's (native.go).
	if t := m.targets[0]; t.provider.dialect == protocol.Anthropic && t.provider.native == nil {
		<-countSlots // the provider counts: no CPU of ours while it does
		holding = false
		if c, ok := g.providerCount(r, x, t, body); ok {
			n, count = c, "provider"
		} else if !take() {
			return
		}
	}
	if count == "" {
		var exact bool
		n, exact = g.counts.input(m, protocol.Anthropic, raw)
		count = "estimated"
		if exact {
			count = "exact"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Sluice-Token-Count", count)
	json.NewEncoder(w).Encode(map[string]int64{"input_tokens": n})
}

// providerCount asks t's provider to count the request's input tokens.
// ok false: it could not (its breaker is open, or the call failed), and
// the caller counts instead; the reason is in the request log.
func (g *Gateway) providerCount(r *http.Request, x *exchange, t target, body *protocol.Body) (int64, bool) {
	p := t.provider
	if st := g.runner.BreakerStats(); p.scope < len(st) && st[p.scope] != nil && st[p.scope].State == breaker.Open {
		x.reason = "count_tokens_breaker_open"
		return 0, false
	}
	if p.counting.Add(1) > countTokensInFlight {
		p.counting.Add(-1)
		x.reason = "count_tokens_busy"
		return 0, false
	}
	defer p.counting.Add(-1)
	ctx, cancel := context.WithTimeout(r.Context(), min(countTokensTimeout, p.timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.callURL(p.anyBase(), "/messages/count_tokens", t.model), bytes.NewReader(body.WithModel(t.model)))
	if err != nil {
		return 0, false
	}
	copyRequestHeaders(req.Header, r.Header, p.forward)
	for k, vv := range p.headers {
		req.Header[k] = vv
	}
	p.authorize(req.Header)
	req.Header.Set("User-Agent", userAgent)
	// The call is named in the request log and its status counted, but
	// it is kept out of the provider's latency figures, which are
	// generations'.
	x.provider = p.name
	resp, err := p.rt.RoundTrip(req)
	if err != nil {
		g.metrics.UpstreamStatus.WithLabelValues(p.name, "error").Inc()
		x.reason = "count_tokens_upstream_error"
		return 0, false
	}
	defer resp.Body.Close()
	g.metrics.UpstreamStatus.WithLabelValues(p.name, strconv.Itoa(resp.StatusCode)).Inc()
	var v struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(data, &v) != nil ||
		v.InputTokens == nil || *v.InputTokens < 0 || *v.InputTokens > protocol.MaxUsage {
		x.reason = "count_tokens_upstream_failed"
		return 0, false
	}
	return *v.InputTokens, true
}
