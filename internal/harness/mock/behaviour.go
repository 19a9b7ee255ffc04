package mock

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/sseenc"
)

// plan is every decision about one call, made when it arrives by the
// upstream model's Planner, and then by the call's headers. Only the
// per-call seed is drawn from the shared source (under its mutex); the rest
// comes from the call's own source, which goes on to draw its words, so how
// long one call runs or how many words it emits cannot shift the decisions
// made for the calls after it.
type plan struct {
	seq       uint64
	id        string // hex, the base of response and request ids
	rng       *rand.Rand
	created   time.Time
	ttft      time.Duration
	tpotScale float64 // brownout multiplier on TPOT
	tokens    int     // reply length before max_tokens
	fail      *Failure
	// contextWindow, prefill and words are the Config's, or this call's
	// headers' (Config.ContextWindow, AssistantPrefill and Words).
	contextWindow int
	prefill       string
	words         string
	// encoding is how the call's stream is written (encoding.go), with
	// its keepalive interval and the seed its shuffle draws from; sse
	// writes it.
	encoding  sseenc.Encoding
	keepEvery time.Duration
	encSeed   [2]uint64
	sse       *sseWriter
}

// Header names a test can set on one request to steer it.
const (
	HeaderLatency      = "X-Mock-Latency"       // TTFT for this call, e.g. 250ms
	HeaderOutputTokens = "X-Mock-Output-Tokens" // reply length for this call
	HeaderFail         = "X-Mock-Fail"          // 500|429|529|KIND[:N][:FOR][:THEN] (faults.go)
	HeaderRetryAfter   = "X-Mock-Retry-After"   // retry-after for a forced failure
	// HeaderContextWindow sets this call's context window in tokens (0:
	// none), HeaderPrefill whether it takes a prefill (allow|refuse) and
	// HeaderWords where its words come from (seed|prompt).
	HeaderContextWindow = "X-Mock-Context-Window"
	HeaderPrefill       = "X-Mock-Prefill"
	HeaderWords         = "X-Mock-Words"
	// HeaderEncoding (encoding.go) picks how this call's stream is
	// written.
)

func (s *Server) newPlan(r *http.Request) (*plan, error) {
	now := s.now()
	s.rngMu.Lock()
	seq, a, b := s.planner.NextSeed()
	s.rngMu.Unlock()
	rng := rand.New(rand.NewPCG(a, b))
	up := s.planner.Decide(now.Sub(s.start), rng)
	p := &plan{
		seq: seq, id: fmt.Sprintf("%016x%08x", up.IDHi, up.IDLo), rng: rng, created: now,
		ttft: up.TTFT, tpotScale: up.TPOTScale, tokens: up.Tokens, fail: up.Fail,
		contextWindow: s.cfg.ContextWindow, prefill: s.cfg.AssistantPrefill, words: s.cfg.Words,
		encSeed: [2]uint64{a ^ 0x5ee5ee5ee5ee5ee5, b},
	}
	if err := p.applyHeaders(r.Header); err != nil {
		return p, err
	}
	if err := p.applyEncoding(r, s.encoding, s.TimeScale()); err != nil {
		return p, err
	}
	p.sse = newSSEWriter(p)
	return p, nil
}

// applyHeaders lets a test override this call's plan. Bad values are the
// test's bug, so they fail loudly with 400 rather than being ignored.
func (p *plan) applyHeaders(h http.Header) error {
	if v := h.Get(HeaderLatency); v != "" {
		d, err := parseLatency(v)
		if err != nil {
			return fmt.Errorf("%s: %v", HeaderLatency, err)
		}
		p.ttft = d
	}
	if v := h.Get(HeaderOutputTokens); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%s: %q is not a token count", HeaderOutputTokens, v)
		}
		p.tokens = n
	}
	if v := h.Get(HeaderFail); v != "" {
		f, err := parseFail(v)
		if err != nil {
			return fmt.Errorf("%s: %v", HeaderFail, err)
		}
		if v := h.Get(HeaderRetryAfter); v != "" {
			if f.RetryAfter, err = parseLatency(v); err != nil {
				return fmt.Errorf("%s: %v", HeaderRetryAfter, err)
			}
		}
		p.fail = f
	}
	return p.applyModelHeaders(h)
}

// parseLatency takes a Go duration, or a bare number of milliseconds
// that fits a Duration (a larger one would wrap, often to a negative).
func parseLatency(v string) (time.Duration, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n <= math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration", v)
	}
	return d, nil
}
