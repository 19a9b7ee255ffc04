package protocol

// A stream's meaning is read from each SSE event once, by a JSON
// tokenizer, into one small record (Event). Every stream decision, the
// first token, usage, the finish, completeness, an error, continuation
// text and stall progress, reads that record and never the bytes, so a
// provider may write its JSON in any legal way (spaces, newlines, key
// order, escapes) and a model may write any text without either
// changing a decision.

// Event is one SSE event's meaning. A parser reuses it: its byte slices
// are valid until the next parse.
type Event struct {
	// Name is the event: field ("" when the event has none).
	Name []byte
	// Invalid: the event has data that is neither one JSON value nor
	// [DONE].
	Invalid bool
	// Head: the event belongs to the stream's head, sent before anything
	// is generated: an OpenAI chunk whose choices carry only a role,
	// empty content or empty tool calls, with no finish, error or output
	// count; Anthropic's message_start, ping and the start of an empty
	// text block; the Responses API's created, in_progress, queued,
	// content_part.added and output_item.added of an item that is not a
	// call; a comment or an empty event.
	Head bool
	// Keepalive: the event says only that the connection lives: a
	// comment, an empty event, an Anthropic ping.
	Keepalive bool
	// Text is the text delta, unescaped: OpenAI's choice 0 delta.content
	// (or a completion's text), Anthropic's text_delta (or a text block
	// started with text), the Responses API's output_text.delta.
	Text []byte
	// OtherText counts the text bytes of other choices (OpenAI n > 1).
	OtherText int
	// Reasoning counts reasoning bytes: OpenAI's reasoning_content or
	// reasoning, Anthropic's thinking_delta, the Responses API's
	// reasoning deltas. A token, but not text.
	Reasoning int
	// Refusal counts refusal bytes (OpenAI's delta.refusal, the
	// Responses API's refusal.delta).
	Refusal int
	// ToolArgs counts tool-argument bytes: OpenAI's
	// tool_calls[].function.arguments, Anthropic's input_json_delta, the
	// Responses API's function_call_arguments.delta.
	ToolArgs int
	// Tool: tool activity: non-empty tool_calls or a function_call, an
	// Anthropic block that is not text (tool_use, server_tool_use, and
	// thinking too: none can be continued as text), input_json_delta, a
	// Responses call item or its arguments.
	Tool bool
	// OtherChoice: a choice other than index 0 carried content.
	OtherChoice bool
	// Finish is why generation ended, when this event says so: OpenAI's
	// finish_reason, Anthropic's stop_reason, and for the Responses API
	// "stop" on response.completed, and on response.incomplete
	// "content_filter" when that was the reason, else "length".
	Finish []byte
	// Usage holds the counts this event reports.
	Usage EventUsage
	// UsageOnly: an OpenAI chunk whose choices are empty and that
	// carries usage: the chunk stream_options.include_usage adds.
	UsageOnly bool
	// Error: the provider's own error event: OpenAI's top-level non-null
	// "error", Anthropic's type or event name "error", the Responses
	// API's error and response.failed.
	Error bool
	// Done: the stream's terminator: OpenAI's [DONE], Anthropic's
	// message_stop, the Responses API's response.completed, .incomplete
	// and .failed.
	Done bool
	// ID and Model: OpenAI's chunk id and model, Anthropic's
	// message_start message.id and model, the Responses API's
	// response.id and model.
	ID, Model []byte
	// Created is an OpenAI chunk's created time, or a Responses API
	// event's response.created_at.
	Created int64
	// Seq is a Responses API event's sequence_number; -1 without one.
	Seq int64
	// Block is the Anthropic content block an event names (-1 for none);
	// BlockStart and BlockStop say the block starts or stops.
	Block                 int
	BlockStart, BlockStop bool
	// other: past the head, but none of the above (content_block_stop, a
	// type this reader does not know, a non-object, an event too large
	// to read).
	other bool
}

// EventUsage is the usage one event reports; each Have flag says its
// count was there, a whole number in [0, MaxUsage].
type EventUsage struct {
	// Output is completion_tokens or output_tokens; Input prompt_tokens
	// or input_tokens; CacheWrite and CacheRead Anthropic's
	// cache_creation_input_tokens and cache_read_input_tokens; Cached
	// OpenAI's prompt_tokens_details.cached_tokens (or
	// input_tokens_details'), part of Input.
	Output, Input, CacheWrite, CacheRead, Cached int

	HaveOutput, HaveInput, HaveCacheWrite, HaveCacheRead, HaveCached bool
	// Provisional: the output count is Anthropic's message_start
	// placeholder, not a final count.
	Provisional bool
}

func (u *EventUsage) any() bool {
	return u.HaveOutput || u.HaveInput || u.HaveCacheWrite || u.HaveCacheRead || u.HaveCached
}

// Token reports whether the event is past the stream's head: the first
// such event is the first token.
func (e *Event) Token() bool { return !e.Head }

// Progress reports whether the event shows generation going on: text,
// reasoning, tool input, a finish, an error, the terminator, an output
// count, or any other event past the head. Keepalives, comments, pings
// and head events are not progress, so a stream that only pings is
// stalled. It is Token's test: whatever is past the head is progress.
func (e *Event) Progress() bool { return !e.Head && !e.Keepalive }
