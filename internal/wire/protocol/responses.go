package protocol

// OpenAI's Responses API (POST /v1/responses) is passed through, never
// translated, but its streams are not Chat Completions': each event
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
