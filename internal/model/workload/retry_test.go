package workload

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// shed is a failed first attempt answered 503, with no hint, at once.
var shed = Ended{Attempt: 1, Status: 503}

func TestRetryDelays(t *testing.T) {
	type want struct {
		d  time.Duration
		ok bool
	}
	at := func(n int) Ended { e := shed; e.Attempt = n; return e }
	for _, c := range []struct {
		name string
		p    Retry
		e    []Ended
		want []want
	}{
		{"the zero value never retries", Retry{}, []Ended{at(1)}, []want{{0, false}}},
		{"none never retries", Retry{Strategy: NoRetry, MaxAttempts: 5}, []Ended{at(1)}, []want{{0, false}}},
		{"immediate, up to the default three attempts", Retry{Strategy: Immediate},
			[]Ended{at(1), at(2), at(3)}, []want{{0, true}, {0, true}, {0, false}}},
		{"backoff doubles from the default base to the cap", Retry{Strategy: Backoff, MaxAttempts: 10, Cap: 3 * time.Second},
			[]Ended{at(1), at(2), at(3), at(4), at(9)},
			[]want{{500 * ms, true}, {time.Second, true}, {2 * time.Second, true}, {3 * time.Second, true}, {3 * time.Second, true}}},
		{"backoff ignores Retry-After", Retry{Strategy: Backoff, Base: 20 * ms},
			[]Ended{{Attempt: 1, Status: 429, RetryAfter: 2 * time.Second}}, []want{{20 * ms, true}}},
		{"a huge attempt number does not overflow", Retry{Strategy: Backoff, MaxAttempts: math.MaxInt, Base: time.Hour, Cap: math.MaxInt64},
			[]Ended{at(500)}, []want{{math.MaxInt64, true}}},
		{"nor does a jittered draw under a huge cap", Retry{Strategy: Jittered, MaxAttempts: math.MaxInt, Base: time.Hour, Cap: math.MaxInt64, Patience: 1},
			[]Ended{at(500)}, []want{{0, false}}},
		{"a base above the cap waits the cap", Retry{Strategy: Backoff, Base: time.Minute, Cap: time.Second},
			[]Ended{at(1)}, []want{{time.Second, true}}},
		{"jittered honours a Retry-After above its draw", Retry{Strategy: Jittered, Base: 10 * ms, Cap: 20 * ms},
			[]Ended{{Attempt: 1, Status: 429, RetryAfter: 150 * ms}, {Attempt: 2, Status: 503, RetryAfter: 150 * ms}},
			[]want{{150 * ms, true}, {150 * ms, true}}},
		{"patience: a retry that would leave after it does not go", Retry{Strategy: Backoff, Base: 150 * ms, MaxAttempts: 5, Patience: 200 * ms},
			[]Ended{{Attempt: 1, Status: 503}, {Attempt: 2, Status: 503, Elapsed: 150 * ms}},
			[]want{{150 * ms, true}, {0, false}}},
		{"patience: leaving exactly at it is too late", Retry{Strategy: Immediate, Patience: time.Second},
			[]Ended{{Attempt: 1, Status: 503, Elapsed: time.Second - 1}, {Attempt: 1, Status: 503, Elapsed: time.Second}},
			[]want{{0, true}, {0, false}}},
		{"patience: a Retry-After past it ends the request", Retry{Strategy: Jittered, Base: ms, Patience: time.Second},
			[]Ended{{Attempt: 1, Status: 429, RetryAfter: 2 * time.Second}}, []want{{0, false}}},
		{"a started answer is never retried", Retry{Strategy: Immediate},
			[]Ended{{Attempt: 1, Status: 200, Started: true}, {Attempt: 1, Status: 0, Started: true}}, []want{{0, false}, {0, false}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			for i, e := range c.e {
				d, ok := c.p.Next(e, rng)
				if d != c.want[i].d || ok != c.want[i].ok {
					t.Errorf("after attempt %d (%+v): %v, %v; want %v, %v", e.Attempt, e, d, ok, c.want[i].d, c.want[i].ok)
				}
			}
		})
	}
}

// Jittered draws uniformly from [0, backoff], both ends included, one
// draw per retry, so the host's seed fixes every delay.
func TestJitteredDrawsFromTheSeed(t *testing.T) {
	p := Retry{Strategy: Jittered, MaxAttempts: 5, Base: 100 * ms, Cap: 300 * ms}
	rng, ref := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for n, limit := range []time.Duration{100 * ms, 200 * ms, 300 * ms, 300 * ms} {
		d, ok := p.Next(Ended{Attempt: n + 1, Status: 503}, rng)
		if want := time.Duration(ref.Int64N(int64(limit) + 1)); !ok || d != want {
			t.Errorf("retry %d: %v, %v; want %v, the seed's draw from [0, %v]", n+1, d, ok, want, limit)
		}
	}
	// Both ends: with a backoff of 1 ns the draw is 0 or 1 ns, each
	// about half the time.
	tiny := Retry{Strategy: Jittered, Base: 1, Cap: 1}
	var seen [2]int
	for range 1000 {
		d, _ := tiny.Next(shed, rng)
		seen[d]++
	}
	if seen[0] < 400 || seen[1] < 400 {
		t.Errorf("draws of 0 and 1 ns: %v; want both ends about equally", seen)
	}
}

// The draw comes before the patience check and only when a retry is
// otherwise allowed, so a host's sequence of draws does not depend on
// how long its requests took, and refusing on attempts or status draws
// nothing.
func TestJitteredDrawsOnlyForARetry(t *testing.T) {
	p := Retry{Strategy: Jittered, MaxAttempts: 2, Patience: time.Second}
	for _, c := range []struct {
		name  string
		e     Ended
		draws bool
	}{
		{"out of attempts", Ended{Attempt: 2, Status: 503}, false},
		{"not retryable", Ended{Attempt: 1, Status: 400}, false},
		{"started", Ended{Attempt: 1, Status: 200, Started: true}, false},
		{"past patience", Ended{Attempt: 1, Status: 503, Elapsed: time.Second}, true},
		{"retried", Ended{Attempt: 1, Status: 503}, true},
	} {
		rng, ref := rand.New(rand.NewPCG(3, 3)), rand.New(rand.NewPCG(3, 3))
		p.Next(c.e, rng)
		if drew := rng.Uint64() != ref.Uint64(); drew != c.draws {
			t.Errorf("%s: drew %v, want %v", c.name, drew, c.draws)
		}
	}
}

func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		status  int
		started bool
		want    bool
	}{
		{0, false, true},    // no response: connection refused or reset
		{429, false, true},  // rate limited
		{500, false, true},  // server error
		{502, false, true},  // bad gateway
		{503, false, true},  // shed
		{529, false, true},  // Anthropic's overloaded
		{504, false, false}, // the gateway already waited as long as it would
		{400, false, false}, // the request is wrong; it stays wrong
		{404, false, false},
		{200, true, false}, // a stream cut short: its status is spent
		{0, true, false},
	} {
		if got := Retryable(c.status, c.started); got != c.want {
			t.Errorf("Retryable(%d, started %v) = %v, want %v", c.status, c.started, got, c.want)
		}
	}
}

func TestParseStrategy(t *testing.T) {
	for in, want := range map[string]Strategy{"": NoRetry, "none": NoRetry, "immediate": Immediate, "backoff": Backoff, "jittered": Jittered} {
		if got, ok := ParseStrategy(in); !ok || got != want {
			t.Errorf("ParseStrategy(%q) = %v, %v", in, got, ok)
		}
		if in != "" && want.String() != in {
			t.Errorf("%v.String() = %q", want, want.String())
		}
	}
	if _, ok := ParseStrategy("exponential"); ok {
		t.Error("an unknown strategy parsed")
	}
}

// TestReadsRetryAfter: exactly the strategies whose Next reads
// Ended.RetryAfter say they read it.
func TestReadsRetryAfter(t *testing.T) {
	for _, s := range []Strategy{NoRetry, Backoff, Jittered, Governed} {
		p := Retry{Strategy: s, MaxAttempts: 5}
		a, okA := p.Next(Ended{Attempt: 1, Status: 503}, rand.New(rand.NewPCG(1, 2)))
		b, okB := p.Next(Ended{Attempt: 1, Status: 503, RetryAfter: 7 * time.Second}, rand.New(rand.NewPCG(1, 2)))
		reads := a != b || okA != okB
		if reads != p.ReadsRetryAfter() {
			t.Errorf("%v: a Retry-After changes its decision: %v; ReadsRetryAfter says %v", s, reads, p.ReadsRetryAfter())
		}
	}
}
