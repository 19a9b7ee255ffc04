// Package tokens counts the input tokens of an LLM request body: what a
// provider will bill as prompt tokens, known before the request is sent,
// for budgets, rate limits in tokens, and routing by context size; and
// the output of an answer, where it is cut at its limit (Output).
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
// # Output
//
// Output counts what a model generated, for a host that cuts an answer
// at its output limit: in the model's own encoding when it is embedded,
// and otherwise by a floor that no subword tokenizer counts more than (a
// token a piece, or one for each given number of bytes), so that an
// answer that kept to its max_tokens is never cut. Output.Prefix cuts a
// text where a token ends. Its comment has the rules.
//
// # The cache and the cost
//
// Tokenizing is two steps: a pre-tokenizer splits the text into pieces
// (words with their leading space, runs of digits, punctuation or
// whitespace), then a BPE encodes each piece on its own. Sluice does the
// first step itself (pretok.go), in time linear in the text, splitting
// exactly where the library's regular expressions split (the tests hold
// it to the library piece for piece, including three quirks of the
// library's matcher the file lists); the library's own split is
// quadratic on a long run of whitespace mixing spaces and newlines
// (" \n" repeated: 60 ms for 10 kB, 6 s for 100 kB). The second step is
// the library's, one piece at a time, and a Counter caches the count of
// every piece it has encoded, so the common words of a language are
// encoded once per process.
//
// A Counter also caches the count of every whole text (a message, a
// tool result) keyed by a seeded hash of its bytes: a chat client resends
// its whole conversation every turn, and a text seen before costs a
// hash and a lookup. Each cache is bounded in entries (DefaultCacheEntries
// each, about 4 MiB each). A request whose texts are all cached costs a
// scan of the body, about 4 µs for 10 kB and no allocation; a new text
// whose words have been seen costs about 10 µs per 1,000 tokens; text
// never seen costs about 0.3 µs per token, most of it in the library.
// docs/BENCHMARKS.md ("Token counting") has the figures.
//
// Two bounds keep a hostile body from buying much CPU. A piece longer
// than 1 KiB (a run of one class of characters: no natural text has one)
// is encoded in chunks of at most 1 KiB and the counts summed, which can
// be off by up to about two tokens per cut. And Request tokenizes at most
// MaxExactBytes (1 MiB) of a body's text, estimates the rest at a token
// per 3 bytes, and says when it did; counting a body costs CPU linear in
// its size, at most what tokenizing 1 MiB of new text costs.
package tokens
