package mock

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
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
}

// Header names a test can set on one request to steer it.
const (
	HeaderLatency      = "X-Mock-Latency"       // TTFT for this call, e.g. 250ms
	HeaderOutputTokens = "X-Mock-Output-Tokens" // reply length for this call
	HeaderFail         = "X-Mock-Fail"          // 500|429|529|reset|hang|malformed|truncate[:N]
	HeaderRetryAfter   = "X-Mock-Retry-After"   // retry-after for a forced failure
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
	}
	return p, p.applyHeaders(r.Header)
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
	return nil
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

// parseFail reads "429", "reset", "truncate:3" and the like.
func parseFail(v string) (*Failure, error) {
	kind, after, hasAfter := strings.Cut(strings.ToLower(strings.TrimSpace(v)), ":")
	f := &Failure{Kind: kind}
	if code, err := strconv.Atoi(kind); err == nil {
		f.Kind, f.Status = FailStatus, code
	}
	if hasAfter {
		n, err := strconv.Atoi(after)
		if err != nil {
			return nil, fmt.Errorf("%q: token count after ':' is not a number", v)
		}
		f.AfterTokens = n
	}
	return f, f.Validate()
}
