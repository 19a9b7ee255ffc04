// Package translate converts between OpenAI's Chat Completions
// (/v1/chat/completions) and Anthropic's Messages (/v1/messages):
// requests, whole answers, streamed answers and error answers, in both
// directions, so that a client of either dialect can be served by a
// provider of either. It also carries OpenAI's Responses API
// (/v1/responses) over Chat Completions, for targets that have no
// Responses API (see "Responses API" below).
//
// # Goals
//
//   - Bend, never guess. Every request parameter is translated, or
//     ignored because it is at its default and asks for nothing (n: 1,
//     logprobs: false, presence_penalty: 0, response_format text,
//     thinking disabled, reasoning_effort none), or else dropped or
//     refused through a Bender. By default (Options.Unsupported) a
//     parameter that leaves the answer's shape alone (Neutral: a seed,
//     the penalties, top_k) is dropped, and one that would change it
//     (n > 1, audio) is refused with an *Error that names it (Param) and
//     locates it (Path); UnsupportedDrop drops both, UnsupportedRefuse
//     refuses both, and Options.Drop drops what it lists whatever the
//     rule. Whatever is dropped is reported in Translated.Dropped for a
//     response header. Nothing is dropped, clamped or rewritten
//     silently.
//   - Stream without buffering. A stream translator holds ids, the open
//     content block, the stop reason and usage counts, never the answer.
//     The one exception is the Responses API's (StreamToResponses),
//     whose grammar repeats every item's text and arguments in its .done
//     events and in the final response: it holds the answer.
//   - Never dress up a failure. A stream cut short gets no made-up
//     terminator; an upstream error event becomes the client dialect's
//     error event, and nothing follows it.
//
// # Non-goals
//
// No HTTP, no clock, no goroutines, no I/O: the host (the gateway) reads
// bodies, stamps times (Created), writes events and decides statuses.
// Model names pass through as they are: the gateway routes and rewrites
// model (protocol.Body.WithModel) before or after translating. Secrets
// are scrubbed by the gateway, as for any provider bytes. Anthropic's
// server tools, documents and citations, and OpenAI's audio and n > 1,
// have no counterpart on the other side and are refused; structured
// output and reasoning have one, and cross (bend.go).
//
// # Organisation
//
//   - RequestToAnthropic, RequestToOpenAI: request bodies (files
//     request_to_*.go, messages_to_anthropic.go). A request body is read
//     key by key (object, in fields.go), so a key nobody handled is
//     noticed and refused instead of ignored; typed structs would skip it,
//     and would match keys without regard to case.
//   - ResponseToOpenAI, ResponseToAnthropic: whole 2xx answers
//     (response.go), read leniently: an answer's extra metadata asks
//     nothing of the client.
//   - StreamToOpenAI, StreamToAnthropic: the Stream interface, Feed per
//     upstream event and Close once (stream_to_*.go). Not safe for
//     concurrent use; one per stream. ParseEvents and Encode (sse.go) cut
//     bytes into events and back.
//   - ErrorToOpenAI, ErrorToAnthropic: error answers (errorbody.go),
//     rendered with protocol.Dialect.ErrorBody so that translated errors
//     look like the gateway's own.
//   - Request, Response, ErrorBody, NewStream (dialect.go): the same,
//     chosen by protocol.Dialect; the identity when the dialects match.
//   - ResponsesToChat, ChatToResponse, NewStreamToResponses: the
//     Responses API over Chat Completions (responses_*.go). They are not
//     chosen by dialect: the Responses API is an endpoint of OpenAI's,
//     and the host calls them for /v1/responses.
//
// Errors: *Error wraps ErrUntranslatable or ErrInvalid (both 400 to the
// client); answers that cannot be translated wrap ErrResponse (the
// upstream failed: 502); Close reports ErrTruncated or ErrStreamFailed.
//
// # Usage
//
//	tr, err := translate.Request(client, provider, body, translate.Options{Drop: cfg.Drop})
//	// err: 400 in the client's dialect, naming err.(*translate.Error).Param.
//	// len(tr.Dropped) > 0: say so in a header.
//	// ... send tr.Body; then, for a 2xx whole answer:
//	out, err := translate.Response(provider, client, answer, now.Unix())
//	// for an error answer:
//	status, out := translate.ErrorBody(provider, client, status, answer)
//	// for a stream, per upstream event:
//	s := translate.NewStream(provider, client, translate.StreamConfig{IncludeUsage: tr.IncludeUsage, Created: now.Unix()})
//	events, n := translate.ParseEvents(buf) // keep buf[n:] for the next read
//	for _, ev := range events { outEvents, err := s.Feed(ev); ... translate.Encode(outEvents) }
//	err = s.Close() // ErrTruncated: add the relay's own error event
//
// # Requests
//
//	OpenAI chat/completions             Anthropic messages
//	----------------------------------  -----------------------------------------
//	leading system/developer messages   system (a string, or text blocks)
//	system message after the first      refused (messages.system): it cannot
//	  user/assistant message              be placed where the client put it
//	user content string | parts         user content string | blocks
//	  text part                           text block
//	  image_url data:<mt>;base64,<d>      image, source {base64, media_type, data}
//	  image_url http(s)://...             image, source {url}
//	  image_url.detail low|high           dropped (Neutral); auto is the default
//	assistant content + tool_calls[]     assistant text block + tool_use blocks
//	  function.arguments (JSON string)    input (object); "" is {}
//	role tool, tool_call_id, content     user turn, tool_result {tool_use_id,
//	                                       content string | text blocks}
//	consecutive turns of one role        merged into one turn (tool results
//	  (tool counts as user)               first, as Anthropic requires)
//	tools[].function{name,description,   tools[]{name, description,
//	  parameters}                          input_schema}; no parameters is
//	                                       {"type":"object","properties":{}}
//	tool_choice auto|none|required       tool_choice {auto}|{none}|{any}
//	tool_choice {function:{name}}        tool_choice {tool, name}
//	parallel_tool_calls: false           tool_choice.disable_parallel_tool_use
//	stop (string | array)                stop_sequences (array); whitespace-only
//	                                       refused: Anthropic rejects them
//	temperature 0..1                     temperature
//	temperature > 1                      dropped (Neutral), never clamped:
//	                                       OpenAI's range is 0..2, Anthropic's
//	                                       0..1, and not the same curve
//	top_p                                top_p
//	max_completion_tokens | max_tokens   max_tokens (required there: absent
//	                                       is Options.DefaultMaxTokens, 4096)
//	stream, stream_options.include_usage stream (usage always comes);
//	                                       include_usage → Translated.IncludeUsage
//	user                                 metadata.user_id
//	tools[].function.strict              tools[].strict
//	response_format json_schema          output_config {format {type
//	  {json_schema {name, schema,          json_schema, schema}}, every
//	  strict}}                             object in the schema closed
//	                                       (additionalProperties: false,
//	                                       which Anthropic requires); an
//	                                       object open in so many words, or
//	                                       no schema, refused
//	response_format json_object          refused: "any object" is no
//	                                       schema Anthropic takes
//	tools[].function.strict: true        the input schema closed likewise
//	response_format text                 (nothing)
//	reasoning_effort minimal low medium  thinking {type enabled, budget_tokens
//	  high xhigh                           1024 2048 8192 16384 32768}: with
//	                                       the client's cap, capped at
//	                                       max_tokens − 1 (the cap counts
//	                                       thinking, as OpenAI's counts
//	                                       reasoning); without one, added to
//	                                       the default max_tokens. Dropped
//	                                       (Neutral) under 1024, for an
//	                                       unknown effort, or with a
//	                                       temperature ≠ 1, top_p < 0.95 or
//	                                       a forced tool_choice, which
//	                                       Anthropic's thinking refuses
//	reasoning_effort none                (nothing)
//
// and the other way (Anthropic on the right, read right to left):
//
//	response_format json_schema {name    output_config.format json_schema
//	  "answer", schema}, no strict         (OpenAI's strict wants every
//	                                       property required)
//	reasoning_effort low medium high     thinking enabled, budget < 4096,
//	                                       < 16384, ≥ 16384; disabled is
//	                                       nothing
//
// What neither side can carry goes to the Bender. Neutral, dropped by
// default: seed, logprobs, top_logprobs, presence_penalty,
// frequency_penalty, temperature > 1 (removed, never clamped), store,
// service_tier, metadata, prediction, safety_identifier,
// prompt_cache_key, messages[].name, image_url.detail,
// stream_options.include_obfuscation; and going to OpenAI top_k,
// cache_control, metadata keys other than user_id, thinking other than
// enabled or disabled, output_config.effort, and thinking and
// redacted_thinking blocks in the history. Not neutral, refused by
// default: n > 1, audio, modalities, logit_bias (it forbids or forces
// tokens: what the answer may say), whitespace-only stop sequences, a
// late system message, tools and content the target lacks (custom
// tools, audio input, documents, server tools, images in tool results,
// is_error), output formats other than json_schema, and any key this
// package does not know.
//
// Going to OpenAI, the cap is written as max_completion_tokens
// (Options.LegacyMaxTokens: max_tokens, for older compatible servers), a
// stream asks for stream_options.include_usage, and a user turn's
// tool_result blocks become tool messages ahead of a user message with
// the rest.
//
// # Answers
//
//	Anthropic message                    OpenAI chat.completion
//	-----------------------------------  ------------------------------------
//	id, model                            id, model (as the provider sent them)
//	—                                    object chat.completion, created (host's)
//	text blocks                          message.content (joined)
//	tool_use {id, name, input}           tool_calls[] {id, function{name,
//	                                       arguments: input as JSON text}}
//	stop_reason end_turn, stop_sequence  finish_reason stop
//	stop_reason max_tokens,              finish_reason length
//	  model_context_window_exceeded
//	stop_reason tool_use                 finish_reason tool_calls
//	stop_reason refusal                  finish_reason content_filter
//	stop_reason pause_turn, unknown      finish_reason stop
//	usage.input_tokens                   usage.prompt_tokens = input_tokens +
//	  + cache_read_input_tokens            cache reads + cache writes
//	  + cache_creation_input_tokens      prompt_tokens_details.cached_tokens =
//	                                       cache reads
//	usage.output_tokens                  completion_tokens; total_tokens = sum
//
// Back the other way: finish_reason stop is end_turn (OpenAI does not say
// which stop sequence matched), message.refusal is a text block with
// stop_reason refusal, input_tokens = prompt_tokens − cached_tokens and
// cache_read_input_tokens = cached_tokens. An answer with other than one
// choice, tool arguments that are not a JSON object, or Anthropic blocks
// other than text, tool_use, thinking and redacted_thinking fail with
// ErrResponse. Thinking and redacted_thinking blocks are skipped: OpenAI's
// chat completions show no reasoning, and output_tokens already counts
// them. A structured answer needs nothing: its text is the JSON.
//
// # Streams
//
//	Anthropic event                          OpenAI chunk
//	---------------------------------------  ---------------------------------
//	message_start                            delta {role: assistant, content: ""}
//	content_block_start text                 (nothing; content if the start
//	                                           carries text)
//	content_block_delta text_delta           delta {content}
//	content_block_start tool_use             delta {tool_calls: [{index, id,
//	                                           type: function, function: {name,
//	                                           arguments: ""}}]}
//	content_block_delta input_json_delta     delta {tool_calls: [{index,
//	                                           function: {arguments}}]}
//	content_block_start thinking,            (nothing, nor for the block's
//	  redacted_thinking                        thinking_delta, signature_delta)
//	content_block_stop, ping, unknown types  (nothing)
//	message_delta stop_reason, usage         delta {}, finish_reason
//	message_stop                             usage chunk (choices: [], when
//	                                           asked), then data: [DONE]
//	error                                    data: {"error": {...}}, and the end
//
// The other way, message_start goes out at the first chunk with usage
// zero (OpenAI counts the prompt only at the end); each run of text and
// each tool call (a new tool_calls index) is one content block, started
// and stopped; finish_reason closes the open block and is held, with the
// usage chunk that follows it, until [DONE], which sends message_delta
// (stop_reason, usage with input_tokens) and message_stop. An OpenAI
// {"error": ...} chunk becomes an event: error. A tool call resumed after
// another began, a second choice, content after the finish, or [DONE]
// before any finish_reason fail with ErrResponse.
//
// # Errors
//
// The status is kept, except overloaded: Anthropic's 529 is OpenAI's 503,
// and the reverse. The message is kept. The type follows the error's kind
// (from the status, or for a stream's error event from the type):
// overloaded_error ⇄ overloaded_error, rate_limit_error ⇄
// rate_limit_exceeded, authentication_error ⇄ 401 invalid_request_error,
// not_found_error ⇄ 404, api_error ⇄ server_error, and so on, spelled as
// protocol.Dialect.ErrorBody spells the gateway's own errors. A body not
// in the source dialect's shape is not passed on: the message says only
// the status.
//
// # What a round trip keeps
//
// OpenAI → Anthropic → OpenAI keeps messages, tools (strict too),
// tool_choice, parallel_tool_calls, stop, temperature, top_p, user,
// stream, usage, a json_schema's schema and reasoning_effort low, medium
// and high (when max_tokens leaves room for the budget), for a request
// already in the form this package writes (system as one string, stop
// as an array, no empty assistant text). It loses the difference
// between system and developer, between max_tokens and
// max_completion_tokens, and between a string and a single text part in
// an assistant turn, a json_schema's name and strict, JSON mode (it
// comes back as a json_schema of {"type":"object"}), and minimal and
// xhigh effort (low and high). Anthropic → OpenAI → Anthropic folds
// cache_creation_input_tokens into input_tokens and stop_sequence into
// end_turn.
//
// # Responses API
//
// A Responses API request is translated into a Chat Completions one
// (which RequestToAnthropic or a native codec can take on), and the chat
// answer back into a response object or response.* events. Usage:
//
//	tr, err := translate.ResponsesToChat(body, translate.Options{Drop: cfg.Drop})
//	// ... tr.Body to the target as a chat request (translated on if need be);
//	// a whole answer:
//	out, err := translate.ChatToResponse(chatAnswer, now.Unix())
//	// a stream (tr.IncludeUsage is true: the chat stream must end with usage):
//	s := translate.NewStreamToResponses(translate.StreamConfig{Created: now.Unix()})
//
// Requests (Responses on the left, chat on the right):
//
//	Responses request                    Chat Completions request
//	-----------------------------------  ------------------------------------
//	model                                model
//	instructions                         a leading system message ("" is
//	                                       nothing)
//	input string                         one user message
//	input items {role, content} or       messages of that role: user,
//	  {type message, role, content}        assistant, system, developer;
//	                                       their id, and status completed,
//	                                       ask nothing
//	  input_text {text}                    text part
//	  input_image {image_url, detail}      image_url part {url, detail}; a URL
//	                                       or a data: URL
//	  input_file {file_data | file_id,     file part {file_data | file_id,
//	    filename}                            filename}
//	  assistant output_text {text}         assistant text (one part: a
//	                                       string; more: text parts)
//	  assistant refusal {refusal}          assistant text: what it said
//	{type function_call, call_id, name,  assistant tool_calls[] {id, function
//	  arguments, id?}                      {name, arguments}}; consecutive
//	                                       calls, and the assistant message
//	                                       just before them, are one message
//	{type function_call_output,          tool message {tool_call_id,
//	  call_id, output}                     content: a string | text parts}
//	tools[] {type function, name,        tools[] {type function, function
//	  description, parameters, strict}     {name, description, parameters,
//	                                       strict}}
//	tool_choice auto|none|required       tool_choice auto|none|required
//	tool_choice {type function, name}    tool_choice {type function,
//	                                       function {name}}
//	text.format json_schema {name,       response_format {type json_schema,
//	  schema, strict, description}         json_schema {name, description,
//	                                       schema, strict}}
//	text.format json_object              response_format {type json_object}
//	text.format text                     (nothing)
//	reasoning.effort                     reasoning_effort
//	max_output_tokens                    max_completion_tokens (max_tokens
//	                                       under Options.LegacyMaxTokens)
//	temperature, top_p,                  the same
//	  parallel_tool_calls, user
//	stream                               stream, stream_options.include_usage
//	                                       (always: the Responses API always
//	                                       reports usage); Translated.
//	                                       IncludeUsage is true
//	store false, background false,       (nothing: they ask for what a
//	  truncation disabled, include [],     translated answer is)
//	  metadata {}, service_tier auto,
//	  top_logprobs 0, text.verbosity
//	  medium, include_obfuscation false
//
// A function tool's absent strict is strict at OpenAI's Responses API,
// which rewrites the schema into strict form (every property required,
// no additional properties); chat's absent strict is not strict. The
// schema is the client's and is sent as written, without strict: only
// strict: true asks for strict tool calls.
//
// Neutral, dropped by default (and named in Dropped): store true,
// metadata, service_tier, prompt_cache_key, prompt_cache_retention,
// safety_identifier, top_logprobs, truncation auto, include,
// stream_options.include_obfuscation true, text.verbosity,
// reasoning.summary and generate_summary, and in input reasoning items
// (chat completions take no reasoning back), an item's status other
// than completed, an assistant message's phase, and an earlier answer's
// annotations and logprobs. Refused, having no counterpart: the stored
// state the Responses API keeps at OpenAI (previous_response_id,
// conversation, prompt, an input item_reference that
// Options.Items does not resolve: the host keeps the items of the
// answers it bridged, and a reference to one reads as the item),
// background true,
// max_tool_calls, every tool but function tools (web_search,
// file_search, code_interpreter, computer_use_preview,
// image_generation, mcp, local_shell, shell, custom, ...: tools[i].type)
// and a tool_choice naming one (or allowed_tools), the built-in tools'
// items in input (web_search_call, file_search_call, computer_call,
// their outputs, ...), content chat completions lack (an image by file
// id, a file by URL, images or files in a system message or a tool
// output, audio), text formats other than text, json_object and
// json_schema, and any key this package does not know. Both lines move
// with Options.Unsupported and Options.Drop, as for the other
// translations.
//
// Answers (chat on the left):
//
//	chat.completion                      response
//	-----------------------------------  ------------------------------------
//	id                                   id resp_<id>; items msg_<id>_<n>,
//	                                       fc_<id>_<n> (n: the output index),
//	                                       the same for one answer every time
//	created (else the host's)            created_at
//	model                                model
//	message.content                      a message item, output_text part
//	                                       {text, annotations [], logprobs []}
//	message.refusal                      a refusal part {refusal} in it
//	(neither, and no tool calls)         a message with an empty output_text
//	tool_calls[] {id, function {name,    function_call items {call_id, name,
//	  arguments}}                          arguments}, after the message
//	finish_reason stop, tool_calls       status completed
//	finish_reason length                 status incomplete, incomplete_details
//	                                       {reason max_output_tokens}; the last
//	                                       item's status incomplete
//	finish_reason content_filter         status incomplete, reason
//	                                       content_filter
//	usage prompt_tokens,                 usage input_tokens,
//	  prompt_tokens_details.               input_tokens_details.cached_tokens,
//	  cached_tokens, completion_tokens,    output_tokens, output_tokens_details.
//	  completion_tokens_details.           reasoning_tokens, total_tokens
//	  reasoning_tokens, total_tokens       (null when the answer has none)
//
// The response object's fields that echo the request (instructions,
// temperature, top_p, tools, tool_choice, ...) are the API's defaults or
// null: the answer's translation does not see the request. An answer
// with other than one choice, or a tool call other than a function,
// fails with ErrResponse.
//
// Streams: response.created and response.in_progress at the first chunk
// (status in_progress, output []); each run of text is a message item
// (response.output_item.added, response.content_part.added with an empty
// output_text part, response.output_text.delta per chunk, and when the
// item ends response.output_text.done with the whole text,
// response.content_part.done and response.output_item.done); a refusal
// is a refusal part (response.refusal.delta, .done); each tool call is a
// function_call item (response.output_item.added with arguments "",
// response.function_call_arguments.delta, .done with the whole
// arguments and the name, response.output_item.done). An item ends when
// the next begins, or at finish_reason; at [DONE] (the usage chunk comes
// between the two) response.completed, or response.incomplete for
// length or content_filter, carries the whole response with its output
// and usage. Every event is named by its type and carries a
// sequence_number from 0. A chat error chunk becomes an error event
// {type error, code (the chat error's code, else its type), message,
// param}, and nothing follows it. A tool call resumed after another item
// began, a second choice, content after the finish, or [DONE] before any
// finish_reason fail with ErrResponse; a stream cut short gets no
// terminal event (Close: ErrTruncated).
//
// # Where Sluice decides differently from LiteLLM and Portkey
//
// Read in LiteLLM's litellm/llms/anthropic/chat/transformation.py and its
// experimental_pass_through adapters, and in Portkey's gateway
// src/providers/anthropic/chatComplete.ts and
// src/services/transformToProviderRequest.ts:
//
//   - Drop only what keeps the answer's shape, and say so. Portkey
//     copies only the parameters its provider config lists, so n,
//     logprobs, seed and the penalties vanish without a word. LiteLLM
//     raises for unsupported parameters unless drop_params is set, and
//     then drops them all silently. Sluice drops a seed or a penalty
//     (Neutral) and refuses n > 1 or audio, by default, and reports every
//     drop (Translated.Dropped); on_unsupported moves the line.
//   - Temperature. Portkey clamps it to Anthropic's maximum of 1, so 1.8
//     quietly becomes 1. LiteLLM passes it on, and Anthropic answers 400.
//     Sluice never sends anything above 1: the two scales are not the
//     same curve, so neither clamping nor halving keeps the client's
//     meaning. It is removed entirely and named in Dropped (refused
//     under UnsupportedRefuse); nothing is clamped.
//   - Merging consecutive messages. Portkey sends turns as they come,
//     and Anthropic rejects two user turns in a row. Sluice merges them,
//     as LiteLLM does, and puts a tool message's result and the user text
//     after it in one user turn.
//   - tool_choice. required is any, as in both. none is none: Portkey's
//     mapping drops it (its code comments that Anthropic has no none), so
//     the model is free to call tools again.
//   - System messages. Both hoist every system message, wherever it
//     stands, into system. Sluice hoists only the leading ones and
//     refuses a later one: moving an instruction changes what it means.
//   - response_format. LiteLLM emulates JSON mode with a forced tool and
//     rewrites the answer, so the answer's shape comes from the gateway.
//     Sluice sends Anthropic's own structured outputs
//     (output_config.format), and the text the model writes is the
//     answer.
//   - Tool schemas pass through whole. Portkey rebuilds input_schema from
//     type, properties and required only, losing $defs, enum-level
//     keywords and additionalProperties.
//   - Usage. OpenAI's prompt_tokens counts every prompt token. LiteLLM
//     counts cache reads in prompt_tokens but not cache writes; Portkey
//     counts neither (only in total_tokens). Sluice adds both, and reports cache reads
//     as cached_tokens, so budgets and bills see every token.
//   - Stream errors. Portkey turns an Anthropic error event into a chunk
//     whose finish_reason is the error type, then [DONE]: a failed stream
//     looks finished. Sluice sends the client dialect's error event and
//     no terminator, and a stream cut short gets none either.
//   - user. LiteLLM silently leaves out a user that looks like an email
//     or a phone number. Sluice passes it as metadata.user_id; if
//     Anthropic rejects it, the client sees Anthropic's reason.
//   - History with tool calls but no tools. LiteLLM can add a dummy
//     tool; Sluice sends what the client sent, and Anthropic's 400 (in
//     the client's dialect) says what to fix. Likewise tool names over
//     OpenAI's 64 characters are not shortened (LiteLLM hashes them).
//   - max_tokens. Anthropic requires it. Sluice uses the caller's
//     default, or 4096, as LiteLLM does; Portkey's mapping sets none.
package translate
