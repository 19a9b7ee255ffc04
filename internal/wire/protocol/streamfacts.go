package protocol

// StreamFacts are what a stream has said so far, folded from its events'
// records (Event): what a relay decides by, and bills by.
type StreamFacts struct {
	// Token: an event past the head was dispatched (the first token);
	// TokenEvent is how many events with data came before it.
	Token      bool
	TokenEvent int
	// Progress counts progress events (Event.Progress): a host that sees
	// it unchanged across reads has seen nothing but keepalives.
	Progress uint64
	// Events counts the events with data.
	Events int
	// Deltas counts text events; TextBytes, ToolArgBytes,
	// ReasoningBytes and OtherBytes (other choices' text, refusals)
	// count what was generated, for billing a stream that is cut.
	Deltas                                              int
	TextBytes, ToolArgBytes, ReasoningBytes, OtherBytes int
	// OtherDeltas counts the events that carried generated output
	// other than text: tool arguments, reasoning, other choices' text,
	// refusals.
	OtherDeltas int
	// UnreadBytes counts the data of the events too large to read
	// (MaxEventData), whose meaning is not known: for Relayed, output.
	UnreadBytes int
	// Tool: tool activity was seen. Unread: an event was too large to
	// read (MaxEventData). OtherChoice: a choice other than 0 carried
	// content. ErrorEvent: the provider sent an error event. Done: the
	// terminator came.
	Tool, Unread, OtherChoice, ErrorEvent, Done bool
	// NextSeq is one past the highest sequence_number an event carried
	// (the Responses API numbers its events from 0): the number of an
	// event added to the stream.
	NextSeq int64
	// Created is the first created time an event carried.
	Created int64
	// Block is the last Anthropic content block an event named; Open
	// says it has started and not stopped.
	Block int
	Open  bool

	finish      [maxReason]byte
	finishN     int
	id, model   [maxIdent]byte
	idN, modelN int
	output      int
	found       bool
	provisional int
	input       [3]int // input, cache writes, cache reads
	haveInput   bool
	cached      int
	haveCached  bool
}

// maxIdent bounds an id or model name kept; a longer one is not kept.
const maxIdent = 128

// fold adds one event's record; data says the event had data.
func (f *StreamFacts) fold(ev *Event, data bool) {
	if data {
		f.Events++
	}
	if !f.Token && ev.Token() {
		f.Token, f.TokenEvent = true, max(0, f.Events-1)
	}
	if ev.Progress() {
		f.Progress++
	}
	if len(ev.Text) > 0 {
		f.Deltas++
		f.TextBytes += len(ev.Text)
	}
	if ev.ToolArgs > 0 || ev.Reasoning > 0 || ev.OtherText > 0 || ev.Refusal > 0 {
		f.OtherDeltas++
	}
	f.ToolArgBytes += ev.ToolArgs
	f.ReasoningBytes += ev.Reasoning
	f.OtherBytes += ev.OtherText + ev.Refusal
	f.Tool = f.Tool || ev.Tool
	f.OtherChoice = f.OtherChoice || ev.OtherChoice
	f.ErrorEvent = f.ErrorEvent || ev.Error
	f.Done = f.Done || ev.Done
	if len(ev.Finish) > 0 && len(ev.Finish) <= maxReason {
		f.finishN = copy(f.finish[:], ev.Finish)
	}
	if f.idN == 0 && len(ev.ID) <= maxIdent {
		f.idN = copy(f.id[:], ev.ID)
	}
	if f.modelN == 0 && len(ev.Model) <= maxIdent {
		f.modelN = copy(f.model[:], ev.Model)
	}
	if f.Created == 0 {
		f.Created = ev.Created
	}
	if ev.Seq >= f.NextSeq {
		f.NextSeq = ev.Seq + 1
	}
	switch {
	case ev.BlockStart:
		f.Block, f.Open = ev.Block, true
	case ev.BlockStop:
		f.Block, f.Open = ev.Block, false
	case ev.Block >= 0:
		f.Block = ev.Block
	}
	u := &ev.Usage
	switch {
	case !u.HaveOutput:
	case u.Provisional:
		f.provisional = u.Output
	default:
		f.output, f.found = u.Output, true
	}
	for i, have := range [3]bool{u.HaveInput, u.HaveCacheWrite, u.HaveCacheRead} {
		if have {
			f.input[i], f.haveInput = [3]int{u.Input, u.CacheWrite, u.CacheRead}[i], true
		}
	}
	if u.HaveCached {
		f.cached, f.haveCached = u.Cached, true
	}
}

// FinishReason is the last finish_reason (OpenAI), stop_reason
// (Anthropic) or final status (Responses, Event.Finish) the stream
// carried, "" if none.
func (f *StreamFacts) FinishReason() string { return string(f.finish[:f.finishN]) }

// Finished reports whether the stream carried a finish reason.
func (f *StreamFacts) Finished() bool { return f.finishN > 0 }

// ID is the stream's id, as its first event to carry one said.
func (f *StreamFacts) ID() string { return string(f.id[:f.idN]) }

// Model is the model the stream's first event to name one said.
func (f *StreamFacts) Model() string { return string(f.model[:f.modelN]) }

// Tokens returns the output count, and whether the provider reported
// it (not counting Anthropic's provisional count in message_start).
// When it did not (a stream cut short, by the provider or the client),
// the count is what was relayed: a token for each delta of text, tool
// arguments or reasoning (a provider streams about a token an event),
// or the provisional count if that is more; a stream whose output came
// in no delta at all is counted a token for four bytes.
func (f *StreamFacts) Tokens() (int, bool) {
	if f.found {
		return f.output, true
	}
	n := f.Deltas + f.OtherDeltas
	if n == 0 {
		n = (f.TextBytes + f.ToolArgBytes + f.ReasoningBytes + f.OtherBytes + 3) / 4
	}
	return min(max(f.provisional, n), MaxUsage), false
}

// BytesPerToken is how many bytes of output Relayed counts as a token at
// least: several times what any tokenizer's tokens average (about four
// bytes of English), so that an answer within its max_tokens never
// counts more than it generated, while one that sends its output in a
// few huge events counts by its size.
const BytesPerToken = 32

// Relayed is how much output the stream has carried, counted from its
// events and never from what the provider says of them: a token for
// each event with output (text, tool arguments, reasoning, other
// choices, refusals: a provider streams about a token an event, often
// more, never less), or a token for each BytesPerToken bytes of that
// output and of the events too large to read, whichever is more. A
// provider that keeps to max_tokens never relays more than max_tokens
// by this count; one that ignores it cannot relay much more unseen, in
// many small events or a few large ones. A host cuts a stream by it
// (lifecycle.Engine.OutputLimit), and bills the cut stream by it.
func (f *StreamFacts) Relayed() int {
	n := f.Deltas + f.OtherDeltas
	b := f.TextBytes + f.ToolArgBytes + f.ReasoningBytes + f.OtherBytes + f.UnreadBytes
	return max(n, (b+BytesPerToken-1)/BytesPerToken)
}

// InputTokens returns the input count the provider reported, and
// whether it reported one: prompt_tokens, or input_tokens with
// Anthropic's cache_creation_input_tokens and cache_read_input_tokens
// added (its input_tokens leave them out; the prompt is all three).
func (f *StreamFacts) InputTokens() (int64, bool) {
	if !f.haveInput {
		return 0, false
	}
	return min(int64(f.input[0])+int64(f.input[1])+int64(f.input[2]), MaxUsage), true
}

// CachedTokens returns how many of InputTokens' count the provider
// served from its prompt cache: OpenAI's cached_tokens (part of
// prompt_tokens), else Anthropic's cache_read_input_tokens. Never more
// than InputTokens' count; 0 when the stream reported no input.
func (f *StreamFacts) CachedTokens() int64 {
	total, ok := f.InputTokens()
	if !ok {
		return 0
	}
	c := int64(f.input[2])
	if f.haveCached {
		c = int64(f.cached)
	}
	return min(c, total)
}
