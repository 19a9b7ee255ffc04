package protocol

import "bytes"

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

// StreamHeadFor is StreamHead for a stream of endpoint e from a provider
// of dialect d.
func StreamHeadFor(e Endpoint, d Dialect, buf []byte) (head int, token bool) {
	if !e.IsResponses() {
		return StreamHead(d, buf)
	}
	for {
		ev, rest, ok := nextEvent(buf[head:])
		if !ok {
			return head, false
		}
		if !responsesHeadEvent(ev) {
			return head, true
		}
		head = len(buf) - len(rest)
	}
}

// responsesHeadEvents open a Responses stream before anything is
// generated: the response is created and in progress, and its first
// output item and content part are announced, empty.
var responsesHeadEvents = []string{"response.created", "response.in_progress", "response.queued",
	"response.output_item.added", "response.content_part.added"}

func responsesHeadEvent(ev []byte) bool {
	name, data := eventFields(ev)
	if len(data) == 0 && len(name) == 0 {
		return true // a comment or an empty event
	}
	typ := responsesType(name, data)
	for _, h := range responsesHeadEvents {
		if string(typ) == h {
			return true
		}
	}
	return false
}

var typeKey = []byte(`"type":"`)

// responsesType is an event's type: its event: name, or else the
// "type" its data opens with.
func responsesType(name, data []byte) []byte {
	if len(name) > 0 {
		return name
	}
	i := bytes.Index(data, typeKey)
	if i < 0 {
		return nil
	}
	rest := data[i+len(typeKey):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return nil
}

// dispatchResponses judges a Responses API event by its type: one of
// the three final events terminates the stream, and an error event, or
// a response that failed, is the provider's error.
func (c *StreamCheck) dispatchResponses(name, head []byte) {
	switch string(responsesType(name, head)) {
	case "response.completed", "response.incomplete":
		c.terminated = true
	case "response.failed":
		c.terminated, c.upstreamErr = true, true
	case "error":
		c.upstreamErr = true
	}
}
