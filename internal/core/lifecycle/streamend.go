package lifecycle

import "time"

// How a committed stream's end is judged. A host reads each event of a
// stream once and keeps what the events said as values (StreamFacts),
// and knows how its read loop ended (StreamStop); from those two alone
// the core says whether the answer is complete (Complete), whether a
// continuation is tried (Mend, then Engine.Continue for where and how)
// and when a quiet stream counts as stalled (StallDeadlineFor). The
// gateway takes the facts from the wire's event records, the simulator
// from the call it plans, so both hosts ask the same questions and get
// the same answers.

// StreamFacts is what a host has seen of a committed stream, as values.
type StreamFacts struct {
	// Text: the client has had text that a continuation could go on
	// from, captured exactly as sent.
	Text bool
	// Tool: a tool call, or any other block a text continuation cannot
	// splice onto, began.
	Tool bool
	// Unread: an event went to the client that could not be read (too
	// large to parse), so what the client has is not known exactly.
	Unread bool
	// Finished: the stream carried its finish reason.
	Finished bool
}

// StreamStop is how a committed stream's read loop ended.
type StreamStop uint8

const (
	// StopClosed: the provider closed the stream after its terminator.
	StopClosed StreamStop = iota
	// StopUnterminated: the provider closed the stream cleanly without
	// its terminator.
	StopUnterminated
	// StopCut: a read failed (a reset, a connection that broke).
	StopCut
	// StopMalformed: an event was not well-formed.
	StopMalformed
	// StopErrorEvent: the provider sent an error event.
	StopErrorEvent
	// StopStalled: nothing came for the stall deadline.
	StopStalled
	// StopUntranslatable: an event could not be translated into the
	// client's API.
	StopUntranslatable
	// StopClient: the client went away, or a write to it failed.
	StopClient
	// StopDeadline: the request's deadline passed.
	StopDeadline
)

func (s StreamStop) String() string {
	switch s {
	case StopClosed:
		return "closed"
	case StopUnterminated:
		return "unterminated"
	case StopCut:
		return "cut"
	case StopMalformed:
		return "malformed"
	case StopErrorEvent:
		return "error_event"
	case StopStalled:
		return "stalled"
	case StopUntranslatable:
		return "untranslatable"
	case StopClient:
		return "client"
	case StopDeadline:
		return "deadline"
	}
	return "unknown"
}

// Complete reports whether the stream is a whole answer: the provider
// closed it after its terminator, or it carried its finish reason,
// whatever its terminator, and no malformed or error event stopped it.
// A provider that leaves out its end marker, or a connection that
// breaks after the finish reason, lost the client nothing; an error
// event (or garbage) after it is the provider saying the answer failed,
// which the client must hear. A terminator is the provider's word that
// the answer is whole, even from one that names no finish reason: going
// on after it would write past the end the client already has.
func Complete(f StreamFacts, s StreamStop) bool {
	return s == StopClosed || f.Finished && s != StopMalformed && s != StopErrorEvent
}

// Mend reports whether a continuation is tried for a stream that ended
// so, and the break's cause (for Engine.Continue and the logs). Never
// for a stream that carried its finish reason: a complete answer has
// nothing to add, and one whose finish was followed by an error has
// nothing either, only its error to tell (going on would write after
// the end the client already has). Never for the client's end, the
// deadline or an untranslatable event, which another call cannot
// change. Never without exact text to go on from, after a tool call's
// start (its arguments cannot be spliced), or when the client had an
// event the host could not read (the text it has is not known).
func Mend(f StreamFacts, s StreamStop) (BreakCause, bool) {
	if f.Finished || !f.Text || f.Tool || f.Unread {
		return 0, false
	}
	switch s {
	case StopUnterminated, StopCut:
		return BreakCut, true
	case StopMalformed:
		return BreakMalformed, true
	case StopErrorEvent:
		return BreakErrorEvent, true
	case StopStalled:
		return BreakStall, true
	}
	return 0, false
}

// Watched reports whether a committed stream is watched for stalls
// (StallDeadlineFor's token): from its first token on, until a tool call
// or any other block a text continuation cannot splice begins. Such a
// block may pause by design (a provider's own tool, a web search, runs
// between its events, with pings at most), and no continuation could
// mend it anyway; the idle timeout still bounds it.
func Watched(f StreamFacts, token bool) bool { return token && !f.Tool }

// StallDeadlineFor is how long a committed stream whose gaps are g may
// go quiet before it is stopped as stalled (StallDeadline), and whether
// it is watched at all: from the first token on (token), whether or not
// text was captured or any target can continue it. A stream that cannot
// be continued then ends with a clean error at the stall deadline rather
// than waiting out the idle timeout, which is only the last bound. Before
// the first token the first-token deadline and the idle timeout watch
// the call; a zero cfg watches nothing.
func StallDeadlineFor(cfg StallConfig, g Gaps, token bool) (time.Duration, bool) {
	if !token || cfg.Ceiling <= 0 {
		return 0, false
	}
	return StallDeadline(cfg, g), true
}
