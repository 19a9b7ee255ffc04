// Package gemini speaks Google's Gemini generateContent API through the
// hub (package native): the gateway's Codec turns a hub request (an
// Anthropic Messages body) into a GenerateContentRequest and Gemini's
// answers, streams and errors back into the hub's; the mock's Server does
// the inverse. The same paths serve the Gemini API (API key) and Vertex
// AI (OAuth2): Call.Path, "/models/{model}:generateContent" or
// ":streamGenerateContent?alt=sse", goes below either base URL.
//
// Choices, each also in docs/BACKENDS-GEMINI.md:
//
//   - Tools are declared with parametersJsonSchema, and structured
//     output with responseMimeType "application/json" and
//     responseJsonSchema: both take JSON Schema as the hub carries it,
//     where parameters and responseSchema take an OpenAPI subset.
//   - thinking {"type":"enabled"} is thinkingConfig.thinkingBudget;
//     "adaptive" is the budget -1 (Gemini's dynamic thinking);
//     "disabled" is left out, since some Gemini models cannot stop
//     thinking and refuse a zero budget. Thought summaries are never
//     asked for, and a thought part an answer holds anyway is skipped;
//     thinking tokens count in output_tokens.
//   - A functionCall without an id gets "toolu_gemini_<n>" (its place
//     among the answer's calls); such ids are Sluice's own and are left
//     out when the conversation comes back. A model turn's first call
//     sent to a gemini-3 model carries the stand-in thoughtSignature
//     Google documents for replayed history, as the hub has no place for
//     Gemini's own signatures.
//   - A prompt Gemini blocks (promptFeedback.blockReason, no candidate)
//     is an answer with stop_reason "refusal" and no content, as a
//     candidate stopped for SAFETY is.
//   - UNAVAILABLE is Anthropic's 529 overloaded_error, which the gateway
//     treats as a provider at capacity, as it does a 503.
//
// Pure: no clock, no goroutines, no network. A stream is read as it
// arrives, holding at most native.MaxEvent bytes of one Gemini event.
package gemini
