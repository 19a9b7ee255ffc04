package upstream

import (
	"time"

	"github.com/sluice-gw/sluice/internal/model/workload"
)

// Config is the whole behaviour of one provider: a script (ParseScript),
// a scenario's upstreams.NAME (ScenarioUpstream), or a literal in a
// test. The zero value is an instant provider (no latency, no failures,
// unlimited capacity) with the default output length; DefaultConfig
// gives the demo latencies. EarlyHead, EmbeddingDim, Models, Answers,
// AssistantPrefill, Words and Encoding describe what the HTTP mock sends and are
// not simulated (the simulator sends no prefill).
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
	// request body; the simulator knows them exactly.
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

	// ContextWindow is the model's context length in tokens (0: no
	// limit): a call whose prompt has more tokens is answered 400 in the
	// dialect's context-length shape (FailContextLength) before it is
	// admitted. The HTTP mock estimates the prompt's tokens from the
	// request body (as for PrefillPer1K); the simulator knows them.
	ContextWindow int `yaml:"context_window"`
	// AssistantPrefill is what the model does with a request whose last
	// message is the assistant's own start (Anthropic's trailing
	// assistant message, vLLM's continue_final_message): PrefillAllow
	// (or empty) continues it, PrefillRefuse answers 400 as a model
	// without prefill does.
	AssistantPrefill string `yaml:"prefill"`
	// Words is where a generated answer's words come from: WordsSeed (or
	// empty) draws them from the call's own seed, so two calls answer
	// differently; WordsPrompt derives them from the prompt's text
	// alone, so every call and every provider gives the same prompt the
	// same answer, and a continuation of it can be checked word for
	// word. Either way a prefilled call continues its answer after the
	// prefill's words.
	Words string `yaml:"words"`

	// Encoding is how the HTTP mock writes its streams: words of
	// package sseenc joined by '+' ("spaced+crlf"; empty: compact, the
	// bytes OpenAI's and Anthropic's APIs write). Its keepalive
	// interval, when the stream stalls, scales with the time scale.
	Encoding string `yaml:"encoding"`

	// Answers script the replies to prompts that contain a given text;
	// other prompts get pseudo-latin words.
	Answers []Answer `yaml:"answers"`
	// Quality is the share of answers that are right (default 1): a
	// scripted answer is its wrong reply otherwise, and the simulator
	// counts an answer of this provider correct with this probability
	// (sluice sim's correct column).
	Quality *float64 `yaml:"quality"`

	// TimeScale records the factor Scaled multiplied every time by (0
	// means 1: real time). It changes nothing itself; the mock reports
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

// Overflows reports whether a prompt of promptTokens tokens exceeds the
// context window, which the provider then refuses with a 400.
func (c Config) Overflows(promptTokens int64) bool {
	return c.ContextWindow > 0 && promptTokens > int64(c.ContextWindow)
}

// Prefill settings (Config.AssistantPrefill) and word sources
// (Config.Words).
const (
	PrefillAllow  = "allow"
	PrefillRefuse = "refuse"
	WordsSeed     = "seed"
	WordsPrompt   = "prompt"
)

// QualityOf is the share of answers a provider gets right: Quality, or
// 1 when unset.
func (c Config) QualityOf() float64 {
	if c.Quality == nil {
		return 1
	}
	return *c.Quality
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

// TokenRange is a uniform length in [Min, Max], in tokens: a reply's
// (Config.OutputTokens) or a prompt's (a scenario's prompt_tokens). Max
// 0 means exactly Min; as OutputTokens, the zero value means
// DefaultOutputTokens.
type TokenRange struct {
	Min int `yaml:"min"`
	Max int `yaml:"max"`
}

// Sizes is the range as the draw every host makes from it.
func (r TokenRange) Sizes() workload.Sizes { return workload.Sizes{Min: r.Min, Max: r.Max} }

// DefaultOutputTokens is the reply length used when none is configured.
var DefaultOutputTokens = TokenRange{Min: 16, Max: 64}

// Brownout slows the calls that start inside [Start, End).
type Brownout struct {
	// Start and End are offsets from the provider's start; End 0 never
	// ends.
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

// Answer scripts the reply to prompts that contain Match: Reply when the
// call is answered right, Wrong (default DefaultWrong) when the
// provider's Quality draws a wrong answer. Fallback evals are tested
// with them: one provider answers an eval's prompt correctly, another
// wrongly.
type Answer struct {
	Match string `yaml:"match"`
	Reply string `yaml:"reply"`
	Wrong string `yaml:"wrong"`
}

// DefaultWrong is a scripted answer's wrong reply when none is given.
const DefaultWrong = "I am not sure."

// DefaultConfig is the demo provider: 50ms TTFT, 5ms per token, 16..64
// output tokens, no failures, unlimited capacity.
func DefaultConfig() Config {
	return Config{
		TTFT:         50 * time.Millisecond,
		TPOT:         5 * time.Millisecond,
		OutputTokens: DefaultOutputTokens,
	}
}
