// Package upstream is the one model of an LLM provider's behaviour:
// how long a call waits for its first token, how fast the rest come,
// how long the answer is, which calls a brownout slows and which fail,
// and what a full provider answers. sluice sim plays it on its virtual
// clock (package sim), sluice mock serves it over HTTP on the wall clock
// (package mock), and a scenario file describes it once for both
// (scenario.upstreams.NAME, read by package upstreamscript), so the provider the
// simulator predicts against is the one a real run meets.
//
// # Goals
//
//   - One set of draws. A Planner draws every decision about a call when
//     it arrives, from a source seeded by Config.Seed, in a fixed order,
//     so the same seed and the same arrival offsets give the same
//     decisions in the simulator and in the mock.
//   - A call's decisions cannot shift another's. Only each call's seed
//     comes from the shared source (NextSeed); the rest come from a
//     source of the call's own (Decide), which the mock goes on to draw
//     the answer's words from.
//   - Say what each setting means once: the script format below, its
//     validation (Config.Validate), its defaults (DefaultConfig) and the
//     time scale (Config.Scaled).
//
// # Non-goals
//
// How a provider admits calls, queues them and slows its batch is
// workload.Capacity, which both hosts run beside the Planner. How a
// decision reaches the wire (error bodies, resets, truncated streams,
// the X-Mock-* headers that override one call's plan) is the mock's.
//
// # Organisation
//
// Pure, like package workload: no clock, no sleeping, no goroutines, no
// locks, no I/O. Time comes in as an offset from the provider's start,
// decisions go out as values (a Plan). A Planner is not safe for
// concurrent use, except Decide, which reads only the Config: the mock
// takes NextSeed under its mutex and decides outside it.
//
// # Behaviour model
//
// A call that starts at offset at (windows are judged by when a call
// starts, not when it ends) goes through:
//
//  1. Failure: each failure rule active at at hits with its rate; the
//     first hit wins, though every active rule draws. status,
//     context_length, content_filter, hang without for and reset with
//     after_tokens 0 replace the call (Failure.Early), after the rule's
//     delay, and never reach capacity. The other kinds corrupt or delay
//     an answer that is otherwise generated normally. A status failure
//     answers its status, 500 when it names none; context_length and
//     content_filter answer 400 (Failure.StatusCode). Before any of
//     this, a call whose prompt exceeds context_window is refused with
//     context_length's 400 (Config.Overflows); the plan is drawn all
//     the same, so the draws of later calls do not depend on prompts.
//  2. Capacity (workload.Capacity): at most max_running calls generate
//     at once; the rest wait in FIFO order, and time queued adds to
//     TTFT. When max_waiting calls already wait, the call is refused
//     with RefusalStatus: 503 on OpenAI's API, as vLLM does, 529
//     overloaded_error on Anthropic's.
//  3. TTFT: ttft plus jitter, or, for a call a brownout window selects
//     (with probability fraction), ttft×multiplier or the window's fixed
//     latency (a ramp from latency to latency_to); plus
//     prefill_per_1k_tokens for each 1,000 prompt tokens
//     (Config.Prefill), during which the call holds its running slot.
//  4. Tokens: the reply length is drawn from output_tokens
//     (TokenRange.Sizes, the draw prompt sizes use too) and capped by
//     the request's max_tokens. Tokens after the first each take tpot ×
//     the brownout's multiplier × (1 + batch_slowdown×(running−1)).
//
// # Script format
//
// A YAML script (upstreamscript.ParseScript; `sluice mock --script FILE`; a scenario's
// upstreams.NAME) sets Config's fields by their yaml names. Omitted
// settings keep DefaultConfig values, unknown keys are errors, and
// durations are Go strings ("250ms", "1m"). The mock's
// testdata/brownout.yaml is a commented example:
//
//	seed: 42
//	ttft: 80ms
//	jitter: {kind: lognormal, p50: 20ms, p99: 400ms}  # or {kind: uniform, max: 50ms}
//	tpot: 8ms
//	early_head: false             # true: a stream's headers and head go out at once
//	output_tokens: 16-64          # or 32, or {min: 16, max: 64}
//	prefill_per_1k_tokens: 40ms   # TTFT grows with the prompt (default 0)
//	max_running: 16
//	max_waiting: 64               # 0 unlimited, -1 no queue
//	batch_slowdown: 0.02
//	embedding_dim: 8
//	models: [mock-gpt, mock-claude]
//	brownouts:
//	  - {start: 30s, end: 90s, multiplier: 10}
//	  - {start: 2m, end: 3m, latency: 8s, fraction: 0.5}
//	failures:
//	  - {kind: status, status: 429, retry_after: 2s, rate: 0.02}
//	  - {kind: reset, rate: 0.5, start: 4m, end: 5m}
//	context_window: 8192          # prompts longer than this get a context-length 400
//	prefill: allow                # or refuse: a prefilled request gets a 400
//	words: seed                   # or prompt: the answer is a function of the prompt
//	encoding: compact             # how the HTTP mock writes streams: spaced+crlf, ...
//	                              # (package sseenc); a failure rule may set its own
//
// Failure kinds, each a single-request fault a gateway must survive
// (rate, start, end and delay apply to all; N is after_tokens; for is
// a silence, 0 forever; then is resume, eof, truncate or reset):
//
//	status          the status (default 500), with retry_after
//	context_length  400 in the dialect's context-length shape
//	content_filter  400 in the dialect's content-filter shape
//	hang            silence before headers: for, then a normal answer;
//	                without for, no answer ever
//	reset           TCP RST: before any byte (N 0) or after N tokens
//	truncate        the connection closes after N tokens (N 0: halfway)
//	eof             the body ends cleanly after N tokens (N 0: halfway),
//	                with no finish reason, usage or end event
//	stall           N tokens (0: headers only, so silence before the
//	                first token), silence for for, then then (default
//	                resume: the rest of the answer)
//	malformed       a garbage body; streaming, one garbage event (N 0),
//	                or N tokens, a garbage event, then then (default eof)
//	no_done         a stream complete but for its end marker: no
//	                data: [DONE] (OpenAI), no message_stop (Anthropic)
//
// For example:
//
//	failures:
//	  - {kind: hang, for: 30s}                        # silent 30 s, then answers
//	  - {kind: stall, after_tokens: 0, for: 30s}      # headers, 30 s, then the answer
//	  - {kind: stall, after_tokens: 40, for: 30s, then: reset}
//	  - {kind: truncate, after_tokens: 40}
//	  - {kind: malformed, after_tokens: 40, then: resume}
//	  - {kind: stall, after_tokens: 20, for: 30s, encoding: pydefault+keepalive}
//
// On a whole (non-streaming) answer a stall holds back the body (the
// headers go out first), and reset, truncate and eof cut the body after
// the N-th token's text; no_done changes nothing.
//
// A brownout needs exactly one of multiplier or latency; fraction and
// rate default to 1; end 0 means the window never closes. In a scenario,
// an upstream without a seed of its own gets one derived from
// scenario.seed and the provider's name (upstreamscript.ScenarioUpstream).
//
// # Usage
//
//	cfg, err := upstreamscript.ScenarioUpstream(data, "primary")
//	pl := upstream.NewPlanner(cfg)
//	p := pl.Next(at) // at: the call's start, from the provider's start
//	// p.Fail != nil && p.Fail.Early(): play the failure after p.Fail.Delay.
//	// Otherwise admit through workload.Capacity, then the first token
//	// after p.TTFT + cfg.Prefill(promptTokens), p.Tokens in all.
package upstream
