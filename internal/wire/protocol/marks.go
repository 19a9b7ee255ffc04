package protocol

// EventMark is one event a StreamCheck dispatched, as a relay that acts
// on events one by one needs it: where it ends in the stream, and what
// the relay does with it (hold back a provider's error event, drop an
// injected usage chunk, splice a continuation's text). It is read from
// the event's record (Event), never from its bytes.
type EventMark struct {
	// End is the stream offset (bytes fed to the check) just past the
	// event's blank line, or -1 for a last event the stream closed
	// without one (dispatched by End).
	End int64
	// Text is the event's text delta (valid until the next Feed, End or
	// ClearMarks); Captured, the length of the text the check captured
	// (CaptureText) once the event was read, -1 when it captures none.
	Text     []byte
	Captured int
	// The event's record: Head, Error, Done, Tool and UsageOnly as Event
	// has them.
	Head, Error, Done, Tool, UsageOnly bool
	// Relayed is the stream's output so far, with this event's
	// (StreamFacts.Relayed): where a relay cuts it; NextSeq, the
	// stream's StreamFacts.NextSeq with this event: the number of an
	// event a relay adds after it.
	Relayed int
	NextSeq int64

	textAt, textEnd int
}

// KeepMarks has the check keep a mark of every event it dispatches,
// until ClearMarks.
func (c *StreamCheck) KeepMarks() { c.keepMarks = true }

// Marks are the marks of the events dispatched since ClearMarks, in
// order.
func (c *StreamCheck) Marks() []EventMark {
	for i := range c.marks {
		m := &c.marks[i]
		m.Text = c.r.markText[m.textAt:m.textEnd:m.textEnd]
	}
	return c.marks
}

// MarksFrom is the stream offset where the first mark's event began:
// where the events before it, cleared, ended.
func (c *StreamCheck) MarksFrom() int64 { return c.marksFrom }

// ClearMarks forgets the marks, which the caller has acted on.
func (c *StreamCheck) ClearMarks() {
	if n := len(c.marks); n > 0 && c.marks[n-1].End >= 0 {
		c.marksFrom = c.marks[n-1].End
	}
	c.marks = c.marks[:0]
	if c.r != nil {
		c.r.markText = c.r.markText[:0]
	}
}

// mark keeps the mark of the event just dispatched; its end is set
// where Feed finds it.
func (c *StreamCheck) mark() {
	ev := &c.ev
	m := EventMark{End: -1, Captured: -1, Head: ev.Head, Error: ev.Error, Done: ev.Done, Tool: ev.Tool, UsageOnly: ev.UsageOnly, Relayed: c.facts.Relayed(), NextSeq: c.facts.NextSeq}
	if c.capture != nil {
		m.Captured = len(*c.capture)
	}
	r := c.reader()
	if c.marks == nil {
		c.marks = r.marks[:0]
	}
	m.textAt = len(r.markText)
	r.markText = append(r.markText, ev.Text...)
	m.textEnd = len(r.markText)
	c.marks = append(c.marks, m)
}
