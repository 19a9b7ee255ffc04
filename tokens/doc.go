// Package tokens counts the input tokens of an LLM request body: what a
// provider will bill as prompt tokens, known before the request is sent,
// for budgets, rate limits in tokens, and routing by context size.
//
// # What is counted
//
// Counter.Request counts an OpenAI body (chat completions, completions,
// embeddings, the Responses API) or an Anthropic Messages body: the text
// of every message, system prompt, tool call and tool result, the JSON
// of tool definitions, and OpenAI's per-message framing. Its comment
// lists the rules. Images, audio and documents are not counted, nor are
// fields that shape the answer. A body that is not well-formed JSON is
// ErrNotJSON; "well-formed" means exactly what encoding/json.Valid says.
//
// # How exact
//
// EncodingFor maps a model to its tokenizer. For OpenAI's models the
// vocabulary is embedded (o200k_base, cl100k_base, from
// github.com/tiktoken-go/tokenizer) and the count of a text is the count
// tiktoken gives: the tests hold published counts and ids, and the
// example conversation of OpenAI's cookbook counts to the 129 (gpt-4)
// and 124 (gpt-4o) prompt tokens the API reported for it. Two parts are
// estimates even there: tool definitions are counted as the JSON sent,
// where OpenAI renders them into a prompt of its own, and images and
// audio are left out.
//
// Every other model (Claude, Llama, Mistral, Gemma, anything unknown)
// is counted in Approximate, cl100k_base, and EncodingFor says so with
// exact false. For Llama 3 this should be close: its tokenizer extends
// cl100k_base's vocabulary and uses its pre-tokenizer, so its counts
// should be the same or slightly lower (not measured here). For Claude the error is not measured
// here: Anthropic does not publish Claude's tokenizer (its count_tokens
// endpoint is the exact answer), and no per-message framing is added
// because none is published, so treat a Claude count as an estimate
// that can be off by tens of percent. Between the two embedded
// encodings, English prose counts agree within 1% (the benchmark chat
// is 1,982 tokens in both); for other scripts cl100k_base counts more,
// which is the safer error for a budget.
//
// # The cache and the cost
//
// Tokenizing is the expensive part: about 0.5 µs of CPU per token
// (1 ms for a 2,000-token request on the 2-CPU benchmark machine, 600 kB
// allocated), several times the gateway's own cost for the same request.
// A chat client resends its whole conversation every turn, so a Counter
// caches the count of every text it has tokenized, keyed by a seeded
// hash of its bytes, bounded in entries (DefaultCacheEntries, about
// 4 MiB). A request whose texts are all cached costs a scan of the body,
// about 5 µs for 10 kB and no allocation; a conversation's next turn
// pays for its new message only. docs/BENCHMARKS.md ("Token counting")
// has the figures.
//
// The tokenizer's pre-tokenizing regular expression is quadratic on some
// inputs: a long run of whitespace mixing spaces and newlines (" \n"
// repeated) costs about 75 ms for 10 kB and 190 ms for 20 kB. A caller
// that counts untrusted bodies on the request path should bound the
// bytes it counts.
package tokens
