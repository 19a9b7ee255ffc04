package protocol

// StreamUsage reads a relayed response's usage as its bytes go by, in
// whatever chunks they arrive: the output count, the input count, the
// finish reason. A stream is read by its events (StreamCheck, its facts
// in StreamFacts), so only the provider's own fields count, however it
// writes its JSON, and never a model's text. A response that opens with
// '{' or '[' is a whole JSON answer too large to hold (relayLarge), read
// by wholeUsage.
//
// The zero value reads a stream of any dialect, taking each event's by
// its type; NewStreamUsage reads one of a known dialect. A malformed
// event is passed over: judging the stream is StreamCheck's task.
type StreamUsage struct {
	check StreamCheck
	told  bool // check's dialect was given (NewStreamUsage)
	mode  uint8
	whole wholeUsage
}

// StreamUsage.mode values.
const (
	usageUnknown = iota // nothing but whitespace yet
	usageStream
	usageWhole
)

// NewStreamUsage returns a meter for a response of endpoint e from a
// provider of dialect d.
func NewStreamUsage(e Endpoint, d Dialect) StreamUsage {
	return StreamUsage{check: NewStreamCheckFor(e, d), told: true}
}

// Write reads the next chunk.
func (u *StreamUsage) Write(p []byte) {
	if u.mode == usageUnknown {
		i := SkipSpace(p, 0)
		if i == len(p) {
			return // leading whitespace, in either case
		}
		u.mode = usageStream
		if p[i] == '{' || p[i] == '[' {
			u.mode = usageWhole
		} else if !u.told {
			u.check.dialect = dialectAuto
		}
		u.check.lenient = true
	}
	if u.mode == usageWhole {
		u.whole.Write(p)
		return
	}
	u.check.Feed(p)
}

// Facts are the stream's facts (empty for a whole answer).
func (u *StreamUsage) Facts() *StreamFacts { return &u.check.facts }

// Tokens returns the output count, and whether the provider reported it
// (StreamFacts.Tokens). An event the stream's end cut short is read as
// if it had ended.
func (u *StreamUsage) Tokens() (int, bool) {
	if u.mode == usageWhole {
		return u.whole.Tokens()
	}
	f := u.check.pendingFacts()
	return f.Tokens()
}

// InputTokens returns the input count the provider reported, and
// whether it reported one (StreamFacts.InputTokens).
func (u *StreamUsage) InputTokens() (int64, bool) {
	if u.mode == usageWhole {
		return u.whole.InputTokens()
	}
	f := u.check.pendingFacts()
	return f.InputTokens()
}

// CachedTokens returns how many of InputTokens' count the provider
// served from its prompt cache (StreamFacts.CachedTokens).
func (u *StreamUsage) CachedTokens() int64 {
	if u.mode == usageWhole {
		return u.whole.CachedTokens()
	}
	f := u.check.pendingFacts()
	return f.CachedTokens()
}

// FinishReason is the last finish reason the response carried, "" if
// none.
func (u *StreamUsage) FinishReason() string {
	if u.mode == usageWhole {
		return u.whole.FinishReason()
	}
	f := u.check.pendingFacts()
	return f.FinishReason()
}

// Release returns the meter's pooled buffers; it must not be used after.
func (u *StreamUsage) Release() { u.check.Release() }
