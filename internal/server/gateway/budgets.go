package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/quota"
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
// reported usage, which costs nothing to read, is recorded either way
// (ledger.go).

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
