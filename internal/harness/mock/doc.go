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
//	POST /v1/responses               OpenAI Responses API, streaming or not,
//	                                 with function tools and text.format
//	POST /v1/messages                Anthropic Messages, streaming or not
//	POST /v1/messages/count_tokens   Anthropic token count (no latency)
//	GET  /v1/models                  OpenAI model list
//	GET  /stats, POST /stats/reset   counters (see Stats)
//	GET  /metrics                    vLLM's queue gauges from the capacity model
//	                                 (vllm:num_requests_running, _waiting,
//	                                 vllm:kv_cache_usage_perc), for replica pools
//	GET  /health                     200
//
// and the routes of every native API this build speaks (package
// vendors): Gemini's POST /v1beta/models/{m}:generateContent and
// :streamGenerateContent?alt=sse and their Vertex AI paths, Bedrock's
// POST /model/{id}/converse and /converse-stream. Each is served by the
// Messages handler through its native.Server (native.Handler), in the
// same process: the call is planned, timed and faulted exactly as a
// /v1/messages call with its headers (X-Mock-Fail and the rest), and its
// answer, stream and errors are written in the vendor's API as they are
// made. Any credentials are accepted; LastRequest records the vendor's
// path and headers (its Body is the Messages request the call became).
//
// Any model name is accepted and echoed. Prompt tokens are estimated as
// ceil(bytes/4) of all message text; one output token is one pseudo-latin
// word with a leading space, drawn from the seeded source (or from the
// prompt: words, below).
//
// # Behaviour model
//
// What a call does is the upstream model's (package upstream, whose doc
// has the whole model and the script format), the one sluice sim plays
// too: Config is upstream.Config, and every call is planned by an
// upstream.Planner when it arrives, from a source seeded by Config.Seed,
// so the same seed replays the same decisions for the same sequence of
// requests. Windows (brownouts, failures) are judged by the call's
// arrival relative to the server's start, on the clock NewWithClock
// takes (New: the wall clock). The mock keeps what happens on the wire:
// the HTTP server and its endpoints, the capacity model's concurrent
// shell (a mutex and a channel per waiting call around
// workload.Capacity), sleeping out TTFT and each token, the failure
// kinds' bytes (below), the per-request headers, the scripted answers'
// matching, the CLI and /metrics.
//
// Nothing, not even headers, is written until TTFT elapses (unless
// early_head). A stream flushes every event as it is produced, and the
// batch slowdown is re-read for every token.
//
// Every wait ends as soon as the request context does, and such a call is
// counted in Stats.CancelledByClient: that is how a gateway test sees that
// a cancel reached the upstream.
//
// # Tools
//
// A request that offers tools (and whose tool_choice is not none) gets an
// answer that calls the tool tool_choice names, or the first function
// offered (a vendor's built-in tools, such as web search, are never
// called), with arguments its schema accepts (schemavalue.go), and the
// finish reason tool_calls / tool_use: chat's tool_calls, Anthropic's
// tool_use block, the Responses API's function_call item, whole or
// streamed as each API streams a call. A request whose last message is a
// tool result (a tool message, a tool_result block, a
// function_call_output item) calls no tool, and its answer's text starts
// with "tool result: " and the result's text, so a client's whole tool
// round trip runs against the mock (tools.go).
//
// A call's arguments cost output tokens, eight bytes each (as a JSON
// answer's text), after the text's words, and are streamed a token at a
// time. max_tokens (max_completion_tokens, max_output_tokens) inside the
// text ends the answer there with no call; inside the arguments it cuts
// the call short as the vendors' models are cut: OpenAI's finish_reason
// length with arguments that are not valid JSON, Anthropic's stop_reason
// max_tokens with the input_json_delta events as far as they got (a
// whole message's tool_use input is then the object of the members that
// were whole, {} for none: the API documents only that the block is
// incomplete), the Responses API's incomplete response with an
// incomplete function_call item.
//
// # Structured output
//
// A request that asks for JSON (OpenAI's response_format json_schema or
// json_object, the Responses API's text.format, Anthropic's
// output_config.format) is answered with JSON in place of words, whole or
// streamed: a value of the schema, as a tool call's arguments are, {} for
// JSON mode. A request that enables Anthropic's thinking gets a short
// thinking block, with its signature, before the text (structured.go).
//
// # Requests the vendors refuse
//
// What a vendor answers 400, the mock answers 400, in the vendor's shape
// and words (refuse.go has the list): OpenAI chat without messages or
// with none, a Responses request without input, a json_schema format
// without its name, a strict schema (strict: true) whose objects do not
// all set additionalProperties false and require every property;
// Anthropic Messages without messages or max_tokens, and a structured
// output or strict tool schema whose objects do not set
// additionalProperties false. They count as bad requests in Stats. A
// native API's call is held to its own API's rules, by its Server.
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
//	           through a non-streaming body (after the N-th token's
//	           text with N)
//
// reset and truncate take over the TCP connection, so they need a real
// server (Start, Main or an http.Server); under an httptest.ResponseRecorder
// they panic with http.ErrAbortHandler.
//
// The single-request faults a gateway must survive one call at a time
// (faults.go; package upstream's doc has their script form):
//
//	hang:30s        silence before headers for 30 s, then the answer
//	stall:0:30s     headers, then 30 s before the first token (a whole
//	                answer: headers, then 30 s before the body)
//	stall:40:30s    40 tokens, 30 s of silence, then the rest; :eof,
//	                :truncate or :reset cut it there instead; without a
//	                duration the silence never ends
//	eof:40          40 tokens, then the body ends cleanly with no finish
//	                reason, usage, [DONE] or message_stop (a whole
//	                answer: its JSON cut after the 40th word)
//	truncate:40     the same, the connection closed (unexpected EOF)
//	reset:40        the same, with a TCP reset
//	malformed:40    40 tokens, then an event whose data is cut mid-JSON
//	                and a clean end; :resume goes on to a complete stream
//	no_done         a complete stream without its end marker: OpenAI's
//	                data: [DONE], or Anthropic's message_stop (its
//	                message_delta still carries stop_reason and usage)
//	context_length  400: OpenAI's error.code context_length_exceeded,
//	                type invalid_request_error, param messages; Anthropic's
//	                invalid_request_error "prompt is too long: N tokens >
//	                M maximum"
//	content_filter  400: Azure OpenAI's code content_filter with its
//	                innererror.content_filter_result; Anthropic's
//	                invalid_request_error "Output blocked by content
//	                filtering policy" (its API has no prompt-filter error)
//
// Two settings act on what the request holds rather than on a draw.
// context_window: N (or X-Mock-Context-Window) answers the
// context_length 400, with the real counts, to a prompt of more than N
// tokens, estimated as the usage is. prefill: refuse (or X-Mock-Prefill)
// answers a prefilled request 400 in the dialect's shape (Anthropic's
// "This model does not support assistant message prefill. The
// conversation must end with a user message."). A prefilled request is
// an Anthropic one whose last message is the assistant's, or an OpenAI
// chat one whose last message is the assistant's and that sets vLLM's
// continue_final_message or add_generation_prompt false; both count as
// bad requests in Stats, not injected errors. Allowed (the default), a
// prefill is continued: the answer leaves out as many words as the
// prefill holds, and usage counts only the words sent.
//
// With words: prompt (or X-Mock-Words: prompt) a generated answer's
// words are a function of the prompt's text alone (system prompt and
// messages, without a prefill), the same in both dialects and on every
// provider: ExpectedAnswer computes it. So when one provider's answer is
// cut after 40 of 60 words and another continues it with those 40 as a
// prefill, the continuation is words 41 to 60, and a test can check the
// client got the whole answer exactly once. Fix the length on both with
// output_tokens or X-Mock-Output-Tokens.
//
// A call a failure rule hit counts as an injected error in Stats even
// when it then answers (a finite hang or stall, no_done).
//
// # Per-request headers
//
//	X-Mock-Latency: 250ms          TTFT for this call (bare numbers are ms)
//	X-Mock-Output-Tokens: 12       reply length for this call
//	X-Mock-Fail: 429               or 500, 529, or a kind (reset, hang,
//	                               malformed, truncate, stall, eof, no_done,
//	                               context_length, content_filter), then
//	                               optional ":" parts in any order: a number
//	                               (after_tokens), a duration (for) and
//	                               resume|eof|truncate|reset (then):
//	                               "stall:40:30s:reset"
//	X-Mock-Retry-After: 2s         retry-after for a forced failure
//	X-Mock-Context-Window: 8192    context_window for this call
//	X-Mock-Prefill: refuse         or allow: prefill for this call
//	X-Mock-Words: prompt           or seed: words for this call
//	X-Mock-Encoding: spaced+crlf   how this call's stream is written (below)
//
// Responses carry x-request-id (OpenAI) or request-id (Anthropic) derived
// from the seed, and plausible x-ratelimit-* / anthropic-ratelimit-*
// headers, so a gateway's header passthrough can be tested.
//
// # Encodings
//
// Real providers write legal SSE and JSON in many ways; a reader that
// matches compact bytes fails on them. `sluice mock --encoding WORDS`,
// a script's encoding: (every call) or a failure rule's encoding: (the
// calls it hits), and X-Mock-Encoding (this call; it wins) pick how the
// OpenAI chat and completions, Anthropic Messages and Responses streams
// are written: words of package sseenc joined by '+'. The default,
// compact, is the bytes the vendors' APIs write. Every encoding carries
// the same values, so the text, finish and usage read from the stream do
// not change.
//
//	spaced, pydefault, pretty       JSON layout (json.dumps; with \u
//	                                escapes; indent 2 over several data: lines)
//	sortkeys, shuffle               key order (shuffle from the call's seed)
//	escaped, slashes                \u00XX letters, \/
//	crlf, cr, nospace, idretry,     SSE framing: line ends, "data:{", id:
//	comments, noevent, oaievent     and retry:, comment lines, no event:
//	                                lines, "event: message" on OpenAI chunks
//	nodone                          no [DONE] / message_stop
//	noping                          no ping after Anthropic's head
//	usagelast                       an OpenAI usage chunk after the finish,
//	                                asked for or not
//	keepalive[:250ms], pings[:...]  during a stall (stall:N:FOR), a comment
//	                                or an Anthropic ping every interval
//	                                (default 1s, times the time scale unless
//	                                set by the header); a ping before the
//	                                head, or in a dialect without pings, is
//	                                a comment
//
// Whole answers, embeddings and the native APIs (whose codecs read the
// Messages stream) are written as before.
//
// # Scripts
//
// LoadScript (`sluice mock --script FILE`) reads a YAML script in the
// format of package upstream's doc; testdata/brownout.yaml is a
// commented example. `sluice mock --scenario FILE --provider NAME`
// (LoadScenarioUpstream) reads one provider's behaviour from a scenario
// file, with the seed the simulator derives for it.
//
// # Time scale
//
// `sluice mock --time-scale T` (Config.Scaled) multiplies every time in
// the behaviour by T, after the script and the other flags: TTFT, TPOT,
// prefill, jitter, brownout and failure windows, delays and Retry-After.
// A failure's silence (for) scales with it. The per-request headers'
// times (X-Mock-Fail's duration included) are the caller's own, in real
// time, and are not scaled.
// It is the factor sluice load --time-scale and sluice serve --time-scale
// take, so all three replay one scenario T times as long (0.25: four
// times faster). Capacity is not scaled: calls T times as long on the
// same slots serve 1/T times the rate, which is what the load sends.
// GET /stats reports the factor as time_scale; a scaled mock also sends
// retry-after-ms on every injected status, since whole seconds would
// round a scaled wait back up.
package mock
