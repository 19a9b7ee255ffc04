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

// plan is every decision about one call, made when it arrives. Only the
// per-call seed is drawn from the shared source (under its mutex); the rest
// comes from a private source, so how long one call runs or how many words
// it emits cannot shift the decisions made for the calls after it.
type plan struct {
	seq       uint64
	id        string // hex, the base of response and request ids
	idHi      uint64
	idLo      uint32
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

// Planner draws every call's behaviour from a Config and one seeded
// source. It is pure: the caller passes each call's start as an offset
// from the provider's start, so the simulator can plan calls on a virtual
// clock with exactly the draws the HTTP mock makes. Not safe for
// concurrent use.
type Planner struct {
	cfg *Config
	rng *rand.Rand
	seq uint64
	// scratch is reused by Next, which keeps no per-call source.
	scratchSrc *rand.PCG
	scratch    *rand.Rand
}

// NewPlanner returns a Planner seeded from cfg.Seed.
func NewPlanner(cfg Config) *Planner {
	src := rand.NewPCG(0, 0)
	return &Planner{
		cfg:        &cfg,
		rng:        rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed5eed5eed5eed)),
		scratchSrc: src,
		scratch:    rand.New(src),
	}
}

// Plan is one call's behaviour.
type Plan struct {
	// TTFT is the time to first token (for a non-streaming call, to the
	// whole answer's first byte), queueing excluded.
	TTFT time.Duration
	// TPOTScale multiplies the per-token time (a brownout's multiplier).
	TPOTScale float64
	// Tokens is the reply length before max_tokens caps it.
	Tokens int
	// Fail is the injected failure, if any.
	Fail *Failure
}

// Next plans the next call, which starts at offset at.
func (pl *Planner) Next(at time.Duration) Plan {
	a, b := pl.draw()
	pl.scratchSrc.Seed(a, b)
	p := plan{rng: pl.scratch}
	pl.decide(at, &p)
	return Plan{TTFT: p.ttft, TPOTScale: p.tpotScale, Tokens: p.tokens, Fail: p.fail}
}

// draw takes the next call's seed from the shared source. Only this is
// shared; the rest of a call's decisions come from the call's own source,
// so how long one call runs or how many words it emits cannot shift the
// decisions for the calls after it.
func (pl *Planner) draw() (uint64, uint64) {
	pl.seq++
	return pl.rng.Uint64(), pl.rng.Uint64()
}

// decide makes a call's decisions from p.rng, in a fixed order of draws.
func (pl *Planner) decide(at time.Duration, p *plan) {
	p.tpotScale = 1
	p.idHi, p.idLo = p.rng.Uint64(), p.rng.Uint32()
	cfg := pl.cfg

	// Draw for every active rule even after one hits, so the number of
	// draws per call does not depend on which rule won.
	for i := range cfg.Failures {
		f := &cfg.Failures[i]
		if !inWindow(at, f.Start, f.End) {
			continue
		}
		if p.rng.Float64() < orOne(f.Rate) && p.fail == nil {
			p.fail = f
		}
	}
	p.ttft = cfg.TTFT + jitter(cfg.Jitter, p.rng)
	hit := false
	for _, w := range cfg.Brownouts {
		if !inWindow(at, w.Start, w.End) {
			continue
		}
		if p.rng.Float64() < orOne(w.Fraction) && !hit {
			hit = true
			if w.Latency > 0 {
				p.ttft = w.latencyAt(at)
			} else {
				p.ttft = time.Duration(float64(p.ttft) * w.Multiplier)
				p.tpotScale = w.Multiplier
			}
		}
	}
	out := cfg.OutputTokens
	p.tokens = out.Min
	if out.Max > out.Min {
		p.tokens += p.rng.IntN(out.Max - out.Min + 1)
	}
}

func (s *Server) newPlan(r *http.Request) (*plan, error) {
	now := s.now()
	s.rngMu.Lock()
	seq := s.planner.seq + 1
	a, b := s.planner.draw()
	s.rngMu.Unlock()
	p := &plan{seq: seq, rng: rand.New(rand.NewPCG(a, b)), created: now}
	s.planner.decide(now.Sub(s.start), p)
	p.id = fmt.Sprintf("%016x%08x", p.idHi, p.idLo)
	return p, p.applyHeaders(r.Header)
}

func orOne(f float64) float64 {
	if f == 0 {
		return 1
	}
	return f
}

func jitter(j Jitter, rng *rand.Rand) time.Duration {
	switch j.Kind {
	case "uniform":
		if j.Max > 0 {
			return time.Duration(rng.Int64N(int64(j.Max) + 1))
		}
	case "lognormal":
		sigma := j.Sigma
		if j.P99 > 0 {
			sigma = math.Log(float64(j.P99)/float64(j.P50)) / 2.3263478740 // z of p99
		}
		// Clamp z so one freak draw cannot stall a demo for hours.
		z := max(-5, min(5, rng.NormFloat64()))
		return time.Duration(float64(j.P50) * math.Exp(sigma*z))
	}
	return 0
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
	return f, f.check()
}

// StatusCode is the HTTP code a status failure answers with: its
// status, 500 when it names none. The simulator plays it the same way.
func (f *Failure) StatusCode() int {
	if f.Status == 0 {
		return http.StatusInternalServerError
	}
	return f.Status
}

// Early reports whether the failure replaces the whole call (status,
// hang, reset before any byte), after its delay. Such a call never
// reaches the capacity model: it holds no slot, never waits and is never
// refused. The other kinds corrupt an answer that is otherwise generated
// normally, under capacity like any other.
func (f *Failure) Early() bool {
	switch f.Kind {
	case FailStatus, FailHang:
		return true
	case FailReset:
		return f.AfterTokens == 0
	}
	return false
}
