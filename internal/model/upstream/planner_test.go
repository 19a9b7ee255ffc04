package upstream

import (
	"math/rand/v2"
	"testing"
	"time"
)

// busy exercises every draw a call makes: failures in and out of their
// windows, jitter, brownouts with a fraction, a ramp, an output range.
func busy() Config {
	return Config{
		Seed: 7, TTFT: 100 * time.Millisecond, TPOT: 5 * time.Millisecond,
		Jitter:       Jitter{Kind: "lognormal", P50: 20 * time.Millisecond, P99: 400 * time.Millisecond},
		OutputTokens: TokenRange{Min: 16, Max: 64},
		Brownouts: []Brownout{
			{Start: time.Second, End: 3 * time.Second, Multiplier: 4, Fraction: 0.5},
			{Start: 2 * time.Second, End: 4 * time.Second, Latency: time.Second, LatencyTo: 3 * time.Second},
		},
		Failures: []Failure{
			{Kind: FailStatus, Status: 429, Rate: 0.2, RetryAfter: time.Second},
			{Kind: FailReset, Rate: 0.3, Start: 2 * time.Second, End: 5 * time.Second},
		},
	}
}

// TestNextIsNextSeedThenDecide: the simulator plans with Next, the mock
// with NextSeed and Decide on a source of the call's own; both must make
// the same decisions for the same seed and arrival offsets.
func TestNextIsNextSeedThenDecide(t *testing.T) {
	sim, mock := NewPlanner(busy()), NewPlanner(busy())
	for i := range 200 {
		at := time.Duration(i) * 25 * time.Millisecond
		got := sim.Next(at)
		seq, a, b := mock.NextSeed()
		want := mock.Decide(at, rand.New(rand.NewPCG(a, b)))
		if seq != uint64(i+1) {
			t.Fatalf("call %d numbered %d", i+1, seq)
		}
		if !samePlan(got, want) {
			t.Fatalf("call %d at %v: Next %+v, NextSeed+Decide %+v", i+1, at, got, want)
		}
	}
}

func TestPlansFollowTheConfig(t *testing.T) {
	pl := NewPlanner(busy())
	var failed, slowed int
	for i := range 4000 {
		at := time.Duration(i) * time.Millisecond // 0..4s
		p := pl.Next(at)
		if p.Tokens < 16 || p.Tokens > 64 {
			t.Fatalf("tokens %d outside 16..64", p.Tokens)
		}
		if p.Fail != nil {
			failed++
			if p.Fail.Kind == FailReset && (at < 2*time.Second) {
				t.Fatalf("a reset at %v, before its window", at)
			}
		}
		if p.TPOTScale == 4 {
			slowed++
			if at < time.Second || at >= 3*time.Second {
				t.Fatalf("a brownout's multiplier at %v, outside its window", at)
			}
		}
		if at >= 3*time.Second && p.TTFT < time.Second {
			t.Fatalf("TTFT %v at %v, inside the ramp from 1s", p.TTFT, at)
		}
	}
	if failed == 0 || slowed == 0 {
		t.Errorf("%d failed and %d slowed of 4000: the rules never hit", failed, slowed)
	}
}

func TestSameSeedSamePlans(t *testing.T) {
	a, b := NewPlanner(busy()), NewPlanner(busy())
	for i := range 100 {
		at := time.Duration(i) * 30 * time.Millisecond
		if pa, pb := a.Next(at), b.Next(at); !samePlan(pa, pb) {
			t.Fatalf("call %d: %+v vs %+v", i, pa, pb)
		}
	}
}

// samePlan compares plans by their failures' rules, not by where each
// Planner keeps its copy of them.
func samePlan(a, b Plan) bool {
	if (a.Fail == nil) != (b.Fail == nil) || (a.Fail != nil && *a.Fail != *b.Fail) {
		return false
	}
	a.Fail, b.Fail = nil, nil
	return a == b
}

func TestFailureKinds(t *testing.T) {
	for _, c := range []struct {
		f      Failure
		early  bool
		status int
	}{
		{Failure{Kind: FailStatus}, true, 500},
		{Failure{Kind: FailStatus, Status: 429}, true, 429},
		{Failure{Kind: FailHang}, true, 500},
		{Failure{Kind: FailReset}, true, 500},
		{Failure{Kind: FailReset, AfterTokens: 3}, false, 500},
		{Failure{Kind: FailTruncate}, false, 500},
		{Failure{Kind: FailMalformed}, false, 500},
	} {
		if c.f.Early() != c.early || c.f.StatusCode() != c.status {
			t.Errorf("%+v: early %v status %d, want %v %d", c.f, c.f.Early(), c.f.StatusCode(), c.early, c.status)
		}
	}
}

func TestRefusalStatus(t *testing.T) {
	if RefusalStatus(false) != 503 || RefusalStatus(true) != 529 {
		t.Errorf("refusals %d (OpenAI) and %d (Anthropic), want 503 and 529", RefusalStatus(false), RefusalStatus(true))
	}
}
