// Package mock is a fake LLM provider speaking the OpenAI and Anthropic
// HTTP APIs, for tests, benchmarks and demos of the gateway. It runs
// in-process (New, then Start or use the Server as an http.Handler) or as
// `sluice mock` (Main).
//
// # Endpoints
//
//	POST /v1/chat/completions        OpenAI chat, streaming or not
//	POST /v1/completions             OpenAI legacy completions
//	POST /v1/embeddings              deterministic unit vectors per input
//	POST /v1/responses               OpenAI Responses API, streaming or not
//	POST /v1/messages                Anthropic Messages, streaming or not
//	POST /v1/messages/count_tokens   Anthropic token count (no latency)
//	GET  /v1/models                  OpenAI model list
//	GET  /stats, POST /stats/reset   counters (see Stats)
//	GET  /metrics                    vLLM's queue gauges from the capacity model
//	                                 (vllm:num_requests_running, _waiting,
//	                                 vllm:kv_cache_usage_perc), for replica pools
//	GET  /health                     200
//
// Any model name is accepted and echoed. Prompt tokens are estimated as
// ceil(bytes/4) of all message text; one output token is one pseudo-latin
// word with a leading space, drawn from the seeded source.
//
// # Behaviour model
//
// Every decision about a call is made when it arrives, from a source seeded
// by Config.Seed, so the same seed replays the same decisions for the same
// sequence of requests. Windows (brownouts, failures) are judged by the
// call's arrival time relative to server start, on Config.Now's clock.
//
// A call then goes through:
//
//  1. Failure: each failure rule active at arrival hits with its rate; the
//     first hit wins. status, hang and reset (with after_tokens 0) replace
//     the call, after the rule's delay, and never reach admission.
//     malformed, truncate and reset with after_tokens corrupt a response
//     that is otherwise generated normally.
//  2. Admission (workload.Capacity, the model the simulator runs too): at
//     most max_running calls generate at once; the rest wait in FIFO
//     order, and time queued adds to TTFT. When max_waiting calls already
//     wait, the call is refused with 503 (OpenAI endpoints, as vLLM does)
//     or 529 overloaded_error (Anthropic).
//  3. TTFT: ttft plus jitter, or, for a call selected by a brownout window
//     (with probability fraction), ttft×multiplier or the window's fixed
//     latency; plus prefill_per_1k_tokens for each 1,000 prompt tokens
//     (estimated at four bytes of message text per token, the rule
//     sluice load sizes its prompts by), during which the call holds its
//     running slot. Nothing, not even headers, is written until TTFT
//     elapses.
//  4. Tokens: the reply length is drawn from output_tokens and capped by
//     max_tokens (max_completion_tokens first on OpenAI), which makes the
//     finish reason "length" / "max_tokens". Tokens after the first each
//     take tpot × brownout multiplier × (1 + batch_slowdown×(running−1)).
//     Streams flush every event as it is produced.
//
// Every wait ends as soon as the request context does, and such a call is
// counted in Stats.CancelledByClient: that is how a gateway test sees that
// a cancel reached the upstream.
//
// # Tools
//
// A request that offers tools (and whose tool_choice is not none) gets an
// answer that calls the tool tool_choice names, or the first one, with
// every property of its schema filled ("mock", 1, true, null), and the
// finish reason tool_calls / tool_use, whole or streamed as each API
// streams a call. A request whose last message is a tool result calls no
// tool, and its answer's text starts with "tool result: " and the
// result's text, so a client's whole tool round trip runs against the
// mock (tools.go).
//
// # Failure kinds
//
//	status     an error in the protocol's own shape (OpenAI 429
//	           rate_limit_error, 5xx server_error; Anthropic 429
//	           rate_limit_error, 529 overloaded_error, 500 api_error), with
//	           retry-after (seconds) and, on 429, retry-after-ms
//	reset      TCP reset (SO_LINGER 0), before any byte or after N tokens
//	hang       no answer until the client gives up
//	malformed  200 with half a JSON body, or one cut-off SSE event
//	truncate   the connection closes partway: after N stream tokens
//	           (default half) with no final events or [DONE], or halfway
//	           through a non-streaming body
//
// reset and truncate take over the TCP connection, so they need a real
// server (Start, Main or an http.Server); under an httptest.ResponseRecorder
// they panic with http.ErrAbortHandler.
//
// # Per-request headers
//
//	X-Mock-Latency: 250ms          TTFT for this call (bare numbers are ms)
//	X-Mock-Output-Tokens: 12       reply length for this call
//	X-Mock-Fail: 429               or 500, 529, reset, hang, malformed,
//	                               truncate; ":N" sets after_tokens
//	X-Mock-Retry-After: 2s         retry-after for a forced failure
//
// Responses carry x-request-id (OpenAI) or request-id (Anthropic) derived
// from the seed, and plausible x-ratelimit-* / anthropic-ratelimit-*
// headers, so a gateway's header passthrough can be tested.
//
// # Script format
//
// A YAML script (LoadScript, `sluice mock --script FILE`) sets Config's
// fields by their yaml names; omitted settings keep DefaultConfig values,
// unknown keys are errors, durations are Go strings ("250ms", "1m").
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
//
// A brownout needs exactly one of multiplier or latency; fraction and rate
// default to 1; end 0 means the window never closes.
//
// # Time scale
//
// `sluice mock --time-scale T` (Config.Scaled) multiplies every time in
// the behaviour by T, after the script and the other flags: TTFT, TPOT,
// prefill, jitter, brownout and failure windows, delays and Retry-After.
// It is the factor sluice load --time-scale and sluice serve --time-scale
// take, so all three replay one scenario T times as long (0.25: four
// times faster). Capacity is not scaled: calls T times as long on the
// same slots serve 1/T times the rate, which is what the load sends.
// GET /stats reports the factor as time_scale; a scaled mock also sends
// retry-after-ms on every injected status, since whole seconds would
// round a scaled wait back up.
package mock
