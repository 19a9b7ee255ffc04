package upstream

import (
	"math"
	"math/rand/v2"
	"time"
)

// Planner draws every call's behaviour from a Config and one seeded
// source. The caller passes each call's start as an offset from the
// provider's start, so the simulator plans calls on its virtual clock
// with exactly the draws the HTTP mock makes on the wall clock. Not
// safe for concurrent use, except Decide (below).
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
	// IDHi and IDLo are the call's identity, the first draws from its
	// source: the mock derives its response and request ids from them.
	IDHi uint64
	IDLo uint32
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
	_, a, b := pl.NextSeed()
	pl.scratchSrc.Seed(a, b)
	return pl.Decide(at, pl.scratch)
}

// NextSeed numbers the next call (from 1) and takes its seed from the
// shared source. Only this is shared: the rest of a call's decisions
// come from a source of its own seeded with a and b (Decide), so how
// long one call runs or how many words it emits cannot shift the
// decisions for the calls after it.
func (pl *Planner) NextSeed() (seq, a, b uint64) {
	pl.seq++
	return pl.seq, pl.rng.Uint64(), pl.rng.Uint64()
}

// Decide makes the decisions of a call that starts at offset at from
// rng, the call's own source, in a fixed order of draws. It reads only
// the Config, so calls may be decided at once from several goroutines
// (the mock's handlers do) as long as each has its own rng.
func (pl *Planner) Decide(at time.Duration, rng *rand.Rand) Plan {
	p := Plan{TPOTScale: 1}
	p.IDHi, p.IDLo = rng.Uint64(), rng.Uint32()
	cfg := pl.cfg

	// Draw for every active rule even after one hits, so the number of
	// draws per call does not depend on which rule won.
	for i := range cfg.Failures {
		f := &cfg.Failures[i]
		if !inWindow(at, f.Start, f.End) {
			continue
		}
		if rng.Float64() < orOne(f.Rate) && p.Fail == nil {
			p.Fail = f
		}
	}
	p.TTFT = cfg.TTFT + jitter(cfg.Jitter, rng)
	hit := false
	for _, w := range cfg.Brownouts {
		if !inWindow(at, w.Start, w.End) {
			continue
		}
		if rng.Float64() < orOne(w.Fraction) && !hit {
			hit = true
			if w.Latency > 0 {
				p.TTFT = w.latencyAt(at)
			} else {
				p.TTFT = time.Duration(float64(p.TTFT) * w.Multiplier)
				p.TPOTScale = w.Multiplier
			}
		}
	}
	p.Tokens = cfg.OutputTokens.Sizes().Draw(rng)
	return p
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
