package mock

import (
	"errors"
	"fmt"
	"time"
)

// Config is the whole behaviour of a mock provider. The zero value is an
// instant provider (no latency, no failures, unlimited capacity) with the
// default output length; DefaultConfig gives the demo latencies.
type Config struct {
	// Seed drives every random decision, so equal seeds replay equal
	// decisions for equal request sequences.
	Seed uint64 `yaml:"seed"`

	// TTFT is the base time to first token; Jitter adds to it per call.
	TTFT   time.Duration `yaml:"ttft"`
	Jitter Jitter        `yaml:"jitter"`
	// TPOT is the time per output token after the first.
	TPOT time.Duration `yaml:"tpot"`
	// EarlyHead makes a stream send its headers and head (OpenAI's
	// role-only chunk; Anthropic's message_start, content_block_start and
	// ping) as soon as the call is admitted, and its first token after
	// TTFT, as some providers do. Without it nothing is sent before TTFT.
	EarlyHead bool `yaml:"early_head"`
	// OutputTokens is the length of a reply before max_tokens caps it.
	OutputTokens TokenRange `yaml:"output_tokens"`
	// PrefillPer1K is the time to read each 1,000 prompt tokens before
	// the first output token: TTFT grows by the prompt's tokens × this
	// / 1000 (0: the prompt costs nothing). The call holds its running
	// slot (MaxRunning) while it prefills, as it does while it
	// generates. The HTTP mock estimates the prompt's tokens from the
	// request body (EstimateTokens); the simulator knows them exactly.
	PrefillPer1K time.Duration `yaml:"prefill_per_1k_tokens"`

	Brownouts []Brownout `yaml:"brownouts"`
	Failures  []Failure  `yaml:"failures"`

	// MaxRunning bounds concurrently generating requests (0 = unlimited).
	MaxRunning int `yaml:"max_running"`
	// MaxWaiting bounds the FIFO queue behind MaxRunning (0 = unlimited,
	// -1 = no queue: reject as soon as every slot is busy).
	MaxWaiting int `yaml:"max_waiting"`
	// BatchSlowdown stretches TPOT by this fraction per extra running
	// request, the way a continuous-batching server slows under load.
	BatchSlowdown float64 `yaml:"batch_slowdown"`

	// EmbeddingDim is the default embedding length (0 = 8).
	EmbeddingDim int `yaml:"embedding_dim"`
	// Models is what GET /v1/models lists; any model name is accepted.
	Models []string `yaml:"models"`

	// Answers script the replies to prompts that contain a given text
	// (answers.go); other prompts get pseudo-latin words.
	Answers []Answer `yaml:"answers"`
	// Quality is the share of answers that are right (default 1): a
	// scripted answer is its wrong reply otherwise, and the simulator
	// counts an answer of this provider correct with this probability
	// (sluice sim's correct column).
	Quality *float64 `yaml:"quality"`

	// Now is the clock that brownout and failure windows are judged by
	// (default time.Now). Sleeps always use real timers.
	Now func() time.Time `yaml:"-"`

	// TimeScale records the factor Scaled multiplied every time by (0
	// means 1: real time). It changes nothing itself; the server reports
	// it in /stats, so a load generator can tell that the mock runs a
	// scenario at the speed it replays it.
	TimeScale float64 `yaml:"-"`
}

// Prefill is how long a prompt of promptTokens tokens takes to read
// before the first output token.
func (c Config) Prefill(promptTokens int64) time.Duration {
	if c.PrefillPer1K <= 0 || promptTokens <= 0 {
		return 0
	}
	return time.Duration(int64(c.PrefillPer1K) * promptTokens / 1000)
}

// Jitter is the random part of TTFT.
type Jitter struct {
	// Kind is "fixed" (or empty: no jitter), "uniform" or "lognormal".
	Kind string `yaml:"kind"`
	// Max bounds uniform jitter, drawn from [0, Max].
	Max time.Duration `yaml:"max"`
	// P50 is the lognormal median; P99 its 99th percentile, or Sigma its
	// shape when P99 is zero. Long-tailed jitter is what real providers show.
	P50   time.Duration `yaml:"p50"`
	P99   time.Duration `yaml:"p99"`
	Sigma float64       `yaml:"sigma"`
}

// TokenRange is a uniform output length in [Min, Max]; Max 0 means
// exactly Min, and the zero value means DefaultOutputTokens.
type TokenRange struct {
	Min int `yaml:"min"`
	Max int `yaml:"max"`
}

// DefaultOutputTokens is the reply length used when none is configured.
var DefaultOutputTokens = TokenRange{Min: 16, Max: 64}

// Brownout slows the calls that start inside [Start, End).
type Brownout struct {
	// Start and End are offsets from server start; End 0 never ends.
	Start time.Duration `yaml:"start"`
	End   time.Duration `yaml:"end"`
	// Fraction of the calls in the window that are affected (0 means 1).
	Fraction float64 `yaml:"fraction"`
	// Multiplier scales TTFT and TPOT; Latency instead replaces TTFT
	// (TPOT unchanged). Exactly one must be set.
	Multiplier float64       `yaml:"multiplier"`
	Latency    time.Duration `yaml:"latency"`
	// LatencyTo makes the window a ramp: a call's TTFT moves linearly
	// from Latency at Start to LatencyTo at End, by when the call starts
	// (a brownout is often a ramp, not a step). Needs Latency and End.
	LatencyTo time.Duration `yaml:"latency_to"`
}

// latencyAt is the TTFT the window gives a call that starts at at.
func (b Brownout) latencyAt(at time.Duration) time.Duration {
	if b.LatencyTo == 0 || b.End <= b.Start {
		return b.Latency
	}
	f := float64(at-b.Start) / float64(b.End-b.Start)
	return b.Latency + time.Duration(f*float64(b.LatencyTo-b.Latency))
}

// Failure kinds.
const (
	FailStatus    = "status"    // an HTTP error in the protocol's shape
	FailReset     = "reset"     // TCP RST, before or mid-response
	FailHang      = "hang"      // never answer; wait for the client to give up
	FailMalformed = "malformed" // 200 with a body that is not JSON
	FailTruncate  = "truncate"  // close the connection partway through
)

// Failure injects an error into a fraction of calls.
type Failure struct {
	Kind string `yaml:"kind"`
	// Status is the HTTP code for kind status (default 500).
	Status int `yaml:"status"`
	// RetryAfter, if set, is sent as retry-after (and retry-after-ms on 429).
	RetryAfter time.Duration `yaml:"retry_after"`
	// Rate is the fraction of calls hit (0 means 1, i.e. every call in the
	// window, which is what a window-limited outage usually wants).
	Rate float64 `yaml:"rate"`
	// Start and End limit the rule to calls starting in that window, as
	// offsets from server start; both zero means always.
	Start time.Duration `yaml:"start"`
	End   time.Duration `yaml:"end"`
	// Delay is waited before a status, reset (before response) or hang
	// failure, because real errors are rarely instant.
	Delay time.Duration `yaml:"delay"`
	// AfterTokens is where reset and truncate cut the response: reset
	// with 0 cuts before any byte is sent; truncate with 0 cuts halfway.
	AfterTokens int `yaml:"after_tokens"`
}

// DefaultConfig is the demo provider: 50ms TTFT, 5ms per token, 16..64
// output tokens, no failures, unlimited capacity.
func DefaultConfig() Config {
	return Config{
		TTFT:         50 * time.Millisecond,
		TPOT:         5 * time.Millisecond,
		OutputTokens: DefaultOutputTokens,
	}
}

// Validate reports the first setting that makes no sense, naming it.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.TTFT < 0 || c.TPOT < 0 || c.PrefillPer1K < 0 {
		bad("ttft, tpot and prefill_per_1k_tokens must not be negative")
	}
	switch c.Jitter.Kind {
	case "", "fixed":
	case "uniform":
		if c.Jitter.Max < 0 {
			bad("jitter.max must not be negative")
		}
	case "lognormal":
		j := c.Jitter
		if j.P50 <= 0 {
			bad("jitter.p50 must be positive for lognormal jitter")
		} else if j.P99 == 0 && j.Sigma <= 0 {
			bad("lognormal jitter needs jitter.p99 or jitter.sigma")
		} else if j.P99 != 0 && j.P99 <= j.P50 {
			bad("jitter.p99 must exceed jitter.p50")
		}
	default:
		bad("jitter.kind %q: want fixed, uniform or lognormal", c.Jitter.Kind)
	}
	if q := c.Quality; q != nil && !(*q >= 0 && *q <= 1) {
		bad("quality %v: want a share from 0 to 1", *q)
	}
	for i, a := range c.Answers {
		if a.Match == "" {
			bad("answers[%d].match: missing; write a text the prompt contains", i)
		}
	}
	if r := c.OutputTokens; r.Min < 0 || (r.Max != 0 && r.Max < r.Min) {
		bad("output_tokens %d..%d: want 0 <= min <= max", r.Min, r.Max)
	}
	for i, b := range c.Brownouts {
		if err := checkWindow(b.Start, b.End); err != nil {
			bad("brownouts[%d]: %v", i, err)
		}
		if b.Fraction < 0 || b.Fraction > 1 {
			bad("brownouts[%d].fraction %v: want 0..1", i, b.Fraction)
		}
		if (b.Multiplier > 0) == (b.Latency > 0) || b.Multiplier < 0 || b.Latency < 0 {
			bad("brownouts[%d]: set exactly one of multiplier or latency, positive", i)
		}
		if b.LatencyTo < 0 || (b.LatencyTo > 0 && (b.Latency == 0 || b.End == 0)) {
			bad("brownouts[%d].latency_to: a ramp needs latency (where it starts) and end, and a positive latency_to", i)
		}
	}
	for i, f := range c.Failures {
		if err := f.check(); err != nil {
			bad("failures[%d]: %v", i, err)
		}
	}
	if c.MaxRunning < 0 || c.MaxWaiting < -1 {
		bad("max_running must be >= 0 and max_waiting >= -1")
	}
	if c.BatchSlowdown < 0 {
		bad("batch_slowdown must not be negative")
	}
	if c.EmbeddingDim < 0 || c.EmbeddingDim > 65536 {
		bad("embedding_dim %d: want 0..65536", c.EmbeddingDim)
	}
	return errors.Join(errs...)
}

func (f Failure) check() error {
	switch f.Kind {
	case FailStatus:
		if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
			return fmt.Errorf("status %d: want 400..599", f.Status)
		}
	case FailReset, FailHang, FailMalformed, FailTruncate:
	default:
		return fmt.Errorf("kind %q: want status, reset, hang, malformed or truncate", f.Kind)
	}
	if f.Rate < 0 || f.Rate > 1 {
		return fmt.Errorf("rate %v: want 0..1", f.Rate)
	}
	if f.RetryAfter < 0 || f.Delay < 0 || f.AfterTokens < 0 {
		return errors.New("retry_after, delay and after_tokens must not be negative")
	}
	return checkWindow(f.Start, f.End)
}

func checkWindow(start, end time.Duration) error {
	if start < 0 || end < 0 {
		return errors.New("start and end must not be negative")
	}
	if end != 0 && end <= start {
		return fmt.Errorf("end %v must be after start %v", end, start)
	}
	return nil
}

// inWindow reports whether offset t falls in [start, end), end 0 = open.
func inWindow(t, start, end time.Duration) bool {
	return t >= start && (end == 0 || t < end)
}
