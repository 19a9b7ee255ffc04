package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/translate"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/tokens"
)

// Tokens are the cost. With budgets, lanes, prices or degradation
// configured, the gateway counts each request's input tokens before it
// is admitted (package tokens, with a cache, so a conversation's earlier
// turns are not counted again), and the engine reserves them, with the
// request's max_tokens, from the key's budget (lifecycle/budgets.go).
// The answer's usage settles the reservation. Without any of those,
// nothing is counted and the path costs nothing more; the provider's
// reported usage, which costs nothing to read, is exported either way
// (account).

// usesTokens reports whether a config needs input tokens counted.
func usesTokens(cfg *config.Config) bool {
	if cfg.Lanes.LargeContext.MinInputTokens > 0 || len(cfg.Prices) > 0 {
		return true
	}
	for _, k := range cfg.Keys {
		if k.Limits.Any() {
			return true
		}
	}
	for _, p := range cfg.Providers {
		if p.Limits.Any() || len(p.ModelLimits) > 0 {
			return true
		}
	}
	for _, m := range cfg.Models {
		// A context window with a fallback routes by the counted prompt
		// (contextroute.go).
		if m.Degrade != nil || (m.ContextWindow > 0 && m.ContextFallback != "") {
			return true
		}
	}
	return false
}

// outgoing is what a request's upstream calls send: the client's body,
// with the edits degradation made (the model is set per target).
type outgoing struct {
	body *protocol.Body
	edit protocol.Edit
	// client is the client's API; cross, the body translated for
	// targets of the other one, edits applied (translate.go).
	client protocol.Dialect
	cross  *crossRequest
	// contract is the structured output the request declared, checked
	// in every whole answer before it is committed (validation.go);
	// onInvalid its model's action, model its name for the metric.
	contract         *contract.Contract
	onInvalid, model string
	// unsupported is the model's on_unsupported, for native providers
	// that set none of their own (nativeOptions).
	unsupported translate.Unsupported
	// crossTried: the body was translated for the targets of the other
	// API, into cross, or could not be (crossMisfit says why).
	crossTried  bool
	crossMisfit lifecycle.Fit
	// nativeCalls are the native targets' requests, coded once by their
	// adapter and sent as they are by every attempt (native.WithCall).
	nativeCalls []nativeCall
}

// reader returns the body for a call to t.
func (o *outgoing) reader(t target) *protocol.BodyReader { return adapterOf(o.client, t).body(o, t) }

// counting is the gateway's token counter: on when budgets, lanes,
// prices or degradation need each request counted (usesTokens); when
// off, count_tokens makes one on first use, so a gateway that never
// counts never loads a vocabulary.
type counting struct {
	on        bool
	counter   *tokens.Counter
	spareOnce sync.Once
}

func newCounting(cfg *config.Config) *counting {
	c := &counting{on: usesTokens(cfg)}
	if c.on {
		c.counter = tokens.NewCounter(0)
	}
	return c
}

// tokens is the counter, made on first use when counting is off.
func (c *counting) tokens() *tokens.Counter {
	if !c.on {
		c.spareOnce.Do(func() { c.counter = tokens.NewCounter(0) })
	}
	return c.counter
}

// input counts the input tokens of a request body in dialect d (the
// client's, whichever API the model's targets speak) in the encoding of
// its model's first target, and says whether the count is exact: in the
// model's own encoding, and within what the counter tokenizes exactly
// (tokens.MaxExactBytes; past it, text is estimated). A body the counter cannot
// read was already refused as malformed; should one slip through, its
// byte length, which a byte-level BPE never exceeds, stands in.
func (c *counting) input(m *model, d protocol.Dialect, raw []byte) (int64, bool) {
	enc, exact := tokens.EncodingFor(m.targets[0].model)
	n, estimated, err := c.tokens().Request(enc, d == protocol.Anthropic, raw)
	if err != nil {
		return int64(len(raw)), false
	}
	return int64(n), exact && !estimated
}

// budgetRefused answers a request its key's budget, or the large-context
// lane's, refused, as lifecycle.Answer says: 429 with the exact wait and
// the key's rate-limit headers; a request larger than the budget's burst
// gets 413 instead, since no wait would let it through; the lane's
// refusal is an overload.
func budgetRefused(m *metrics.Metrics, w http.ResponseWriter, x *exchange, rej *admission.Rejection) {
	reply := lifecycle.Answer(*rej)
	who := "lane:large_context"
	if rej.Reason == admission.ReasonKeyBudget && x.key != nil {
		who = x.key.name
	}
	m.BudgetRefusals.WithLabelValues(who, rej.Dimension).Inc()
	subject := "this key's"
	if rej.Reason == admission.ReasonLaneBudget {
		subject = "the large-context lane's"
	}
	dim := strings.ReplaceAll(rej.Dimension, "_", " ")
	kind, outcome := replyStatus(reply)
	if reply.Kind == lifecycle.ReplyTooLarge {
		x.fail(w, kind, outcome, string(rej.Reason),
			fmt.Sprintf("the request needs more %s than %s whole per-minute budget (%d input tokens counted, max_tokens reserved); shorten it or lower max_tokens", dim, subject, x.inputTokens), 0)
		return
	}
	x.fail(w, kind, outcome, string(rej.Reason),
		fmt.Sprintf("%s per-minute budget of %s is spent; retry after %s", subject, dim, rej.RetryAfter.Round(time.Millisecond)), reply.RetryAfter)
}

// setRateHeaders writes the key's budget into the headers each API's
// clients read to pace themselves: OpenAI's x-ratelimit-* (whose one
// token family reports the scarcer of input and output) or Anthropic's
// anthropic-ratelimit-*. A provider's own rate-limit headers, which
// describe the gateway's account and not the client's, are then not
// passed on (copyResponseHeaders).
func (g *Gateway) setRateHeaders(h http.Header, x *exchange) {
	if x.key == nil {
		return
	}
	st, ok := x.sharedStatus, x.haveShared
	if !ok {
		st, ok = g.runner.KeyStatus(x.key.index)
	}
	if !ok {
		return
	}
	now := g.now()
	if x.endpoint.Dialect == protocol.Anthropic {
		for d, name := range [3]string{"requests", "input-tokens", "output-tokens"} {
			s := st[d]
			if s.Limit == 0 {
				continue
			}
			h.Set("Anthropic-Ratelimit-"+name+"-Limit", strconv.FormatInt(s.Limit, 10))
			h.Set("Anthropic-Ratelimit-"+name+"-Remaining", strconv.FormatInt(s.Remaining, 10))
			h.Set("Anthropic-Ratelimit-"+name+"-Reset", now.Add(s.Reset).UTC().Format(time.RFC3339))
		}
		return
	}
	set := func(family string, s quota.Status) {
		h.Set("X-Ratelimit-Limit-"+family, strconv.FormatInt(s.Limit, 10))
		h.Set("X-Ratelimit-Remaining-"+family, strconv.FormatInt(s.Remaining, 10))
		h.Set("X-Ratelimit-Reset-"+family, resetText(s.Reset))
	}
	if s := st[quota.Requests]; s.Limit > 0 {
		set("Requests", s)
	}
	in, out := st[quota.InputTokens], st[quota.OutputTokens]
	switch {
	case in.Limit > 0 && (out.Limit == 0 || in.Remaining <= out.Remaining):
		set("Tokens", in)
	case out.Limit > 0:
		set("Tokens", out)
	}
}

// resetText is a reset duration as OpenAI writes it: "1m0s", "6ms",
// "0s", rounded up to a millisecond so it is never early.
func resetText(d time.Duration) string {
	return ((d + time.Millisecond - 1) / time.Millisecond * time.Millisecond).String()
}

// isRateLimitHeader reports whether k (canonical) is a rate-limit header
// of either API.
func isRateLimitHeader(k string) bool {
	return strings.HasPrefix(k, "X-Ratelimit-") || strings.HasPrefix(k, "Anthropic-Ratelimit-")
}

// count counts the request's input tokens, when anything needs them
// (usesTokens).
func (h *hop) count() bool {
	if h.g.counts.on {
		h.req.InputTokens, h.x.exactCount = h.g.counts.input(h.m, h.x.endpoint.Dialect, h.body.Raw())
		h.x.inputTokens = h.req.InputTokens
	}
	return true
}

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

// trim drops the oldest messages, never a system or developer message
// and never the last, until the request's input fits limit tokens (or
// nothing more can go). It returns the new messages array, how many were
// dropped and the new count.
func (c *counting) trim(m *model, dialect protocol.Dialect, body *protocol.Body, total, limit int64) ([]byte, int, int64) {
	var msgs []json.RawMessage
	if err := json.Unmarshal(body.Messages(), &msgs); err != nil || len(msgs) < 2 {
		return nil, 0, total
	}
	keep := make([]bool, len(msgs))
	for i := range keep {
		keep[i] = true
	}
	dropped := 0
	for i := 0; i < len(msgs)-1 && total > limit; i++ {
		var role struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(msgs[i], &role) == nil && (role.Role == "system" || role.Role == "developer") {
			continue
		}
		one := append(append([]byte(`{"messages":[`), msgs[i]...), `]}`...)
		n, _ := c.input(m, dialect, one)
		total -= n
		keep[i] = false
		dropped++
	}
	if dropped == 0 {
		return nil, 0, total
	}
	kept := make([]json.RawMessage, 0, len(msgs)-dropped)
	for i, k := range keep {
		if k {
			kept = append(kept, msgs[i])
		}
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return nil, 0, total
	}
	return out, dropped, max(total, 0)
}

// quotas names the engine's budgets for the metrics.
func (g *Gateway) quotas() []metrics.Quota {
	stats := g.runner.BudgetStats()
	out := make([]metrics.Quota, 0, len(stats))
	if g.fleet != nil {
		out = append(out, g.sharedQuotas()...)
	}
	for _, s := range stats {
		name := "large_context"
		switch s.Owner {
		case "key":
			name = g.keys.name(s.Index)
		case "provider":
			name = g.byScope[s.Index].name
		}
		out = append(out, metrics.Quota{Owner: s.Owner, Name: name, Dimension: s.Dimension.String(),
			Limit: s.Limit, Remaining: s.Remaining, Reserved: s.Reserved})
	}
	return out
}

// account records the tokens and cost of a request whose provider
// answered (a 2xx), however it ended: answered, cut by the provider,
// abandoned by the client or by its deadline. The provider's reported
// usage is free to read, so it is recorded whatever the configuration;
// Sluice's own input count exists only when something needs tokens
// counted (usesTokens), and is recorded then, where the provider
// reported none. The output is the provider's count, or else what was
// counted of the relayed stream. Cost uses the same figures: the
// provider's input count when it gave one, of which the part it served
// from its prompt cache (reportedCached) is priced as cached input
// (price.Price.Cost). Both metrics label model with the client-facing
// name and provider with the provider; the cost adds upstream_model,
// the name prices are keyed by. The same figures go to the usage
// records (usage.go).
func (g *Gateway) account(x *exchange) {
	if x.borrowed || x.upstreamStatus/100 != 2 {
		return
	}
	key := "-"
	if x.key != nil {
		key = x.key.name
	}
	model := x.model
	if model == "" {
		model = "-"
	}
	in, inSource, haveIn := x.inputTokens, "counted", g.counts.on
	if !x.exactCount {
		inSource = "estimated"
	}
	var cached int64
	if x.reportedInput > 0 {
		in, inSource, haveIn = x.reportedInput, "reported", true
		cached = min(x.reportedCached, in)
		x.inputTokens = in // the log and the trace show the provider's count
	}
	out := "estimated"
	if x.usageKnown {
		out = "reported"
	}
	if haveIn {
		g.metrics.Tokens.WithLabelValues(key, model, x.provider, "input", inSource).Add(float64(in))
	}
	g.metrics.Tokens.WithLabelValues(key, model, x.provider, "output", out).Add(float64(x.outputTokens))
	u := price.Usage{Input: in - cached, CachedInput: cached, Output: int64(x.outputTokens)}
	if !haveIn {
		u.Input = 0
	}
	p, priced := g.prices[x.upstreamModel]
	if priced {
		x.cost = p.Cost(u)
		g.metrics.Cost.WithLabelValues(key, model, x.provider, x.upstreamModel).Add(x.cost.Dollars())
	}
	g.usage.record(x, u, priced)
}
