package protocol

import "encoding/json"

// OpenAI's Responses API (POST /v1/responses), when passed through to a
// provider that serves it, streams not as Chat Completions do: each event
// names its type ("event: response.output_text.delta", and "type" in the
// data), and a stream ends with response.completed, response.incomplete
// or response.failed instead of [DONE]. Its errors and statuses are
// OpenAI's. The checks below are the chat ones with those rules.

// Responses is the Responses API's endpoint.
var Responses = Endpoint{Name: "responses", Path: "/v1/responses", Dialect: OpenAI, Streams: true}

// IsResponses reports whether e is the Responses API.
func (e Endpoint) IsResponses() bool { return e.Name == Responses.Name }

// NewStreamCheckFor returns the check for a stream of endpoint e from a
// provider of dialect d: a Responses API stream's own, or d's.
func NewStreamCheckFor(e Endpoint, d Dialect) StreamCheck {
	return StreamCheck{dialect: d, responses: e.IsResponses()}
}

// ResponsesStreamErrorEvent renders an error as the Responses API's
// error event (event: error, {"type":"error","code","message","param",
// "sequence_number"}), numbered seq: for a Responses stream that breaks
// after its headers went out. Its code is the kind's OpenAI error type.
func ResponsesStreamErrorEvent(k Kind, msg string, seq int64) []byte {
	b, _ := json.Marshal(struct {
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
		Seq     int64   `json:"sequence_number"`
	}{"error", k.typeName(OpenAI), msg, nil, seq})
	return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
}
