package protocol

// StreamUsage reads a relayed stream's usage as its bytes go by, in
// whatever chunks they arrive: the output count, the input count, the
// finish reason. A stream is read by its events (StreamCheck, its facts
// in StreamFacts), so only the provider's own fields count, however it
// writes its JSON, and never a model's text. (A whole answer is read by
// AnswerUsage, or by the gateway's decoder when it is too large to
// hold.)
//
// The zero value reads a stream of any dialect, taking each event's by
// its type; NewStreamUsage reads one of a known dialect. A malformed
// event is passed over: judging the stream is StreamCheck's task.
type StreamUsage struct {
	check   StreamCheck
	told    bool // check's dialect was given (NewStreamUsage)
	started bool
}

// NewStreamUsage returns a meter for a stream of endpoint e from a
// provider of dialect d.
func NewStreamUsage(e Endpoint, d Dialect) StreamUsage {
	return StreamUsage{check: NewStreamCheckFor(e, d), told: true}
}

// Write reads the next chunk.
func (u *StreamUsage) Write(p []byte) {
	if !u.started {
		u.started = true
		if !u.told {
			u.check.dialect = dialectAuto
		}
		u.check.lenient = true
	}
	u.check.Feed(p)
}

// Facts are the stream's facts.
func (u *StreamUsage) Facts() *StreamFacts { return &u.check.facts }

// Tokens returns the output count, and whether the provider reported it
// (StreamFacts.Tokens). An event the stream's end cut short is read as
// if it had ended.
func (u *StreamUsage) Tokens() (int, bool) {
	f := u.check.pendingFacts()
	return f.Tokens()
}

// InputTokens returns the input count the provider reported, and
// whether it reported one (StreamFacts.InputTokens).
func (u *StreamUsage) InputTokens() (int64, bool) {
	f := u.check.pendingFacts()
	return f.InputTokens()
}

// CachedTokens returns how many of InputTokens' count the provider
// served from its prompt cache (StreamFacts.CachedTokens).
func (u *StreamUsage) CachedTokens() int64 {
	f := u.check.pendingFacts()
	return f.CachedTokens()
}

// FinishReason is the last finish reason the stream carried, "" if
// none.
func (u *StreamUsage) FinishReason() string {
	f := u.check.pendingFacts()
	return f.FinishReason()
}

// Release returns the meter's pooled buffers; it must not be used after.
func (u *StreamUsage) Release() { u.check.Release() }
