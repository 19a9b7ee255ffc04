// Package bedrock speaks AWS Bedrock's Converse and ConverseStream API
// (one API for the Claude, Llama, Mistral, Nova and other models Bedrock
// serves) through the native hub, Anthropic's Messages API: Kind's Codec
// for the gateway, its Server for the mock.
//
// The Codec turns a hub request into POST /model/{modelId}/converse (or
// /converse-stream when the hub streams), a Converse answer into a hub
// answer, a ConverseStream event stream (application/vnd.amazon.eventstream,
// framed and read by this package: eventstream.go) into the hub's
// server-sent events, and a Bedrock error (its X-Amzn-ErrorType) into the
// hub's error. The Server is its inverse, for the mock.
//
// What Converse cannot carry goes through a translate.Bender. Two hub
// features are bent rather than carried:
//
//   - Structured output (output_config.format json_schema) is a forced
//     call of the tool JSONAnswerTool, whose input schema is the
//     requested schema; the answer's tool call is turned back into text
//     (a text block holding the JSON, or text deltas carrying its
//     fragments), and its stop reason tool_use into end_turn. A request
//     that also declares tools of its own cannot be bent so: refused, or
//     the format dropped, by on_unsupported.
//   - thinking, top_k and earlier thinking blocks reach Anthropic's models
//     (ids holding "anthropic.") through additionalModelRequestFields and
//     reasoningContent; for the other families they are shape-neutral and
//     dropped by default.
//
// The package is pure: no clock, goroutines or network. Ids of answers,
// which Converse does not give, are derived from a hash of the answer
// (whole) or of the request (stream).
package bedrock

import "github.com/sluice-gw/sluice/internal/wire/native"

// Kind is Bedrock's Converse API as the config names it: kind: bedrock.
func Kind() native.Kind {
	return native.Kind{Name: "bedrock", Codec: codec{}, Server: server{}}
}

var (
	_ native.Codec  = codec{}
	_ native.Server = server{}
)
