package grammar

import "fmt"

// Dialect is the grammar a stream is held to.
type Dialect uint8

const (
	// OpenAIChat is OpenAI's Chat Completions stream.
	OpenAIChat Dialect = iota + 1
	// Anthropic is Anthropic's Messages stream.
	Anthropic
	// Responses is OpenAI's Responses API stream.
	Responses
)

func (d Dialect) String() string {
	switch d {
	case OpenAIChat:
		return "openai-chat"
	case Anthropic:
		return "anthropic"
	case Responses:
		return "responses"
	}
	return fmt.Sprintf("dialect(%d)", uint8(d))
}

// Rule names one rule of a grammar; a Violation says which it broke.
type Rule string

// The rules, as the package doc states them.
const (
	// RuleFraming: the stream ends inside an event, which a reader drops.
	RuleFraming Rule = "sse-framing"
	// RuleJSON: an event's data is not a JSON object.
	RuleJSON Rule = "json-object"
	// RuleShape: an event lacks a field its type requires, or has one of
	// the wrong kind.
	RuleShape Rule = "event-shape"
	// RuleTerminator: the stream ends without its dialect's terminator
	// ([DONE], message_stop, a terminal response event) or an error.
	RuleTerminator Rule = "terminator"
	// RuleAfterEnd: an event follows the terminator or an error event.
	RuleAfterEnd Rule = "nothing-after-end"

	// RuleNoEventField: an OpenAI chat event has an event: field.
	RuleNoEventField Rule = "openai-no-event-field"
	// RuleFinishOnce: a choice's finish_reason came twice.
	RuleFinishOnce Rule = "openai-finish-once"
	// RuleAfterFinish: a choice has a chunk after its finish.
	RuleAfterFinish Rule = "openai-nothing-after-finish"
	// RuleUsageChunk: the usage-only chunk came before every choice
	// finished, or a chunk with choices came after it.
	RuleUsageChunk Rule = "openai-usage-chunk-after-finish"
	// RuleToolCall: a tool_calls delta without its index, or a call's
	// first delta without its id, type function and function name.
	RuleToolCall Rule = "openai-tool-call-deltas"
	// RuleDoneAfterFinish: [DONE] came before every choice finished.
	RuleDoneAfterFinish Rule = "openai-done-after-finish"

	// RuleEventName: an Anthropic or Responses event's event: field is
	// missing or differs from its data's type.
	RuleEventName Rule = "event-name-is-type"
	// RuleKnownType: an event of a type the dialect does not have.
	RuleKnownType Rule = "known-event-type"
	// RuleFirst: the stream does not begin with message_start or
	// response.created, or has a second one.
	RuleFirst Rule = "first-event"
	// RuleBlocks: content blocks not started, delta'd and stopped in
	// order, with matching indexes, one open at a time.
	RuleBlocks Rule = "anthropic-block-order"
	// RuleDeltaFits: a content block delta of a type its block does not
	// take.
	RuleDeltaFits Rule = "anthropic-delta-fits-block"
	// RuleMessageDelta: message_delta not once, after the last block's
	// stop and before message_stop.
	RuleMessageDelta Rule = "anthropic-message-delta"

	// RuleSequence: a Responses event without a sequence_number, or
	// with one not above the one before.
	RuleSequence Rule = "responses-sequence-number"
	// RuleItems: an output item's (or content part's) events before it
	// was added or after it was done, or a completed response with an
	// item not done.
	RuleItems Rule = "responses-item-order"
)

// Violation is a stream breaking its grammar: the rule, and the event
// that broke it.
type Violation struct {
	Dialect Dialect
	// Index is the event's index (Event.Index); the number of events
	// when the stream's end is at fault.
	Index int
	// Type is the event's type (its data's type, or its event: name),
	// when it has one.
	Type   string
	Rule   Rule
	Detail string
}

func (v *Violation) Error() string {
	at := fmt.Sprintf("event %d", v.Index)
	if v.Type != "" {
		at += " (" + v.Type + ")"
	}
	d := "stream"
	if v.Dialect != 0 {
		d = v.Dialect.String() + " stream"
	}
	return fmt.Sprintf("%s, %s: breaks rule %s: %s", d, at, v.Rule, v.Detail)
}
