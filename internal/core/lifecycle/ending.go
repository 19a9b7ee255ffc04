package lifecycle

import (
	"time"
)

// EndKind is how an upstream call ended, as its host saw it: the facts,
// before they mean anything to limits and breakers (Ending.Outcome says
// what they mean).
type EndKind uint8

const (
	// EndAnswered: the provider answered 2xx, and the answer is the
	// client's (or would have been, had another call not won).
	EndAnswered EndKind = iota
	// EndInvalid: the provider answered 2xx, but the answer broke
	// the structured output its request declared, and was refused or is
	// to be retried.
	EndInvalid
	// EndRefused: the provider answered with an error status (Status).
	EndRefused
	// EndBroken: a 2xx whose body or stream was malformed or cut short.
	EndBroken
	// EndUnreachable: no connection to the provider, or it broke before
	// any answer.
	EndUnreachable
	// EndDeadline: the request's deadline passed first.
	EndDeadline
	// EndAbandoned: the client left, the engine answered the request early
	// (Ready.Abandon), or the call lost a race to the request's other
	// call.
	EndAbandoned
)

// Ending is how an upstream call ended, with what came with it.
type Ending struct {
	Kind EndKind
	// Status is the provider's HTTP status, when one came; RetryAfter
	// its Retry-After, when it sent one.
	Status     int
	RetryAfter time.Duration
	// Responses: the call went to the Responses API (/v1/responses).
	Responses bool
	// OutputTokens, InputTokens and UsageKnown: the call's usage, as in
	// Outcome, as far as the host counted it (an answer's, or what was
	// relayed of a call cut short).
	OutputTokens int
	InputTokens  int64
	UsageKnown   bool
	// Invalid: an answer the client got although it broke the request's
	// declared schema (on_invalid: pass).
	Invalid bool
	// ContextExceeded: the provider refused the prompt as too long for
	// its context window (protocol.ContextExceeded); see context.go.
	ContextExceeded bool
	// UnknownModel: with a 404, the provider said the model the call
	// named, or the path it was sent to, does not exist there
	// (protocol.UnknownModel): the target is wrong, not the request. Any
	// other 404 (a file, a stored response, a tool resource the body
	// names) is the request's own, and says nothing about the provider.
	UnknownModel bool
}

// Outcome is what an ending means to the engine:
//
//   - an answer is OK (Invalid when it broke its schema, which only the
//     breaker may count against the provider);
//   - an error status is classified by StatusOutcome, except a 404 from
//     the Responses API, which says the provider lacks that endpoint,
//     not that it is failing: that call counts as cancelled; a 404
//     carries UnknownModel, which decides whose fault it is (see
//     breakerOutcome);
//   - a broken answer is Failed, no connection is ConnError, a passed
//     deadline is TimedOut, an abandoned call is Cancelled.
//
// The status and Retry-After the provider sent, and the usage the host
// counted, come with every kind.
func (e Ending) Outcome() Outcome {
	var o Outcome
	switch e.Kind {
	case EndAnswered:
		o = Outcome{Kind: OK, Invalid: e.Invalid}
	case EndInvalid:
		o = Outcome{Kind: OK, Invalid: true}
	case EndRefused:
		if e.Responses && e.Status == statusNotFound {
			o = Outcome{Kind: Cancelled}
		} else {
			o = StatusOutcome(e.Status, e.RetryAfter)
			o.UnknownModel = e.Status == statusNotFound && e.UnknownModel
		}
	case EndBroken:
		o = Outcome{Kind: Failed}
	case EndUnreachable:
		o = Outcome{Kind: ConnError}
	case EndDeadline:
		o = Outcome{Kind: TimedOut}
	case EndAbandoned:
		o = Outcome{Kind: Cancelled}
	}
	o.Status, o.RetryAfter = e.Status, e.RetryAfter
	o.OutputTokens, o.InputTokens, o.UsageKnown = e.OutputTokens, e.InputTokens, e.UsageKnown
	return o
}
