// Package grammar checks that a stream follows its dialect's event
// grammar: the events a vendor's own streaming parser knows, in the order
// the vendor sends them. It is test tooling: the gateway's tests run every
// stream Sluice emits through it, so a client that reads a Sluice stream
// with OpenAI's or Anthropic's SDK never meets an event it does not know,
// or events out of the vendor's order. Nothing outside _test files may
// import it.
//
// A stream is first framed as a reader following the SSE specification
// frames it (Frame): lines end in LF, CRLF or a lone CR; a line starting
// with ':' is a comment; a field's value loses one leading space
// ("data:x" and "data: x" are the same); data lines are joined with "\n";
// a blank line dispatches the event, unless it has no data. An event the
// stream does not end with its blank line is one a reader drops, and is
// a violation in itself. Each event's data is then read with a real JSON
// parser and judged by the dialect's rules:
//
// OpenAIChat, Chat Completions (POST /v1/chat/completions):
//
//   - no event: field at all, not even "event: message" (OpenAI sends
//     none, and its Python SDK wraps a named event's data, which breaks
//     the chunk it carries);
//   - every data is a chat.completion.chunk object (id, object, created,
//     model, choices[] each with index and delta), or the error object
//     {"error":{"message":...}}, after which nothing follows;
//   - a choice's finish_reason comes at most once, and nothing of that
//     choice follows it; the usage-only chunk (choices [], a usage
//     object) comes only after every choice finished, and only [DONE]
//     after it;
//   - every tool_calls delta has its index, and the first delta of each
//     call carries its id, type "function" and function.name;
//   - data: [DONE] is last, after every choice finished, and nothing
//     follows it.
//
// Anthropic, Messages (POST /v1/messages):
//
//   - every event has an event: field equal to its data's type, one of
//     message_start, content_block_start, content_block_delta,
//     content_block_stop, message_delta, message_stop, ping, error (the
//     SDKs skip an unnamed event: its text is silently lost);
//   - message_start comes first, once;
//   - content blocks are started, delta'd and stopped with matching
//     indexes, 0, 1, 2 in order, one open at a time, and each delta fits
//     its block (text_delta and citations_delta a text block,
//     input_json_delta a tool_use block, thinking_delta and
//     signature_delta a thinking block);
//   - one message_delta (with its delta and usage) after the last
//     block's stop, then message_stop, last;
//   - an error event ends the stream.
//
// Responses, the Responses API (POST /v1/responses):
//
//   - every event has an event: field equal to its data's type, one of
//     the documented set: response.created, .in_progress, .queued,
//     .output_item.added/.done, .content_part.added/.done,
//     .output_text.delta/.done/.annotation.added, .refusal.delta/.done,
//     .function_call_arguments.delta/.done, the reasoning, built-in
//     tool and audio events, response.completed, .incomplete, .failed,
//     and error;
//   - every event carries a sequence_number, strictly increasing;
//   - response.created comes first, once;
//   - an output item is added before its events and done after them, a
//     content part likewise within its item, and response.completed
//     comes only when every item is done;
//   - response.completed, .incomplete, .failed or error is last.
//
// Check returns the first violation, a *Violation naming the event's
// index (from 0, in the order a reader dispatches them; the number of
// events when the end of the stream is at fault), its type and the rule
// it breaks.
package grammar
