package protocol

import "sync"

// StreamCheck judges an SSE stream as it is relayed, in whatever chunks
// it arrives, and reads its meaning: it frames the events (any legal
// SSE framing), reads each one's data once into an Event
// (EventParser), and folds the records into the stream's facts
// (StreamFacts). Every event's data must be one JSON value (or OpenAI's
// [DONE]), and the stream must end with its dialect's terminator, [DONE]
// for OpenAI, message_stop for Anthropic, a final response event for
// the Responses API. A provider that closes the stream early, or
// streams garbage under a 200, has failed, however healthy its status
// line looked.
//
// It also finds event boundaries, so a relay can pass on whole events
// only: a client never sees half of an event that turns out to be
// corrupt. An event's data is held, up to MaxEventData, in a pooled
// buffer (Release returns it); past that the event is still judged, by
// a JSONScanner as it streams, but not read (StreamFacts.Unread).
type StreamCheck struct {
	dialect   Dialect
	responses bool // a Responses API stream (responses.go)

	st     uint8 // where in a line the scan is
	field  [8]byte
	fieldN uint8
	kind   uint8 // the current line's field: fData, fEvent, fOther

	// The current event.
	begun   bool // a line of it has been seen
	hasData bool
	dataLen int
	over    bool        // its data passed MaxEventData: json judges it
	json    JSONScanner // for data past MaxEventData
	name    [maxName]byte
	nameN   int
	r       *eventReader // the data and its parser, from readerPool

	ev      Event
	facts   StreamFacts
	capture *[]byte
	// lenient: a malformed event is passed over rather than ending the
	// scan (a meter reads on whatever the verdict).
	lenient bool
	// head: StreamHead's scan, which stops at the first token.
	head      bool
	headToken bool        // it found the first token
	onEvent   func(Event) // tests: each event as dispatched (a copy: the check does not escape)

	// Marks (KeepMarks): every event dispatched since ClearMarks, for a
	// relay that acts on events one by one; fed counts the bytes fed,
	// marksFrom is where the first mark's event began, markText holds
	// the marks' text.
	keepMarks bool
	marks     []EventMark // in r, so that they are pooled
	fed       int64
	marksFrom int64

	terminated  bool // the dialect's terminator has been seen
	upstreamErr bool // the provider sent an error event
	bad         bool // an event was not well-formed
}

// MaxEventData bounds the data of an event that is read; a larger one
// is judged well-formed or not, but its meaning is not read.
const MaxEventData = 64 << 10

// maxName bounds an event name kept; a longer one matches none.
const maxName = 64

// eventReader is a check's pooled part: an event's data, and the parser
// that reads it.
type eventReader struct {
	data []byte
	p    EventParser
	// A relay's marks (KeepMarks), kept here to be pooled.
	marks    []EventMark
	markText []byte
}

var readerPool = sync.Pool{New: func() any { return new(eventReader) }}

func (c *StreamCheck) reader() *eventReader {
	if c.r == nil {
		c.r = readerPool.Get().(*eventReader)
		c.r.data, c.r.marks, c.r.markText = c.r.data[:0], c.r.marks[:0], c.r.markText[:0]
	}
	return c.r
}

// Release returns the check's pooled buffers. The check, its Last and
// its captured slices must not be used after.
func (c *StreamCheck) Release() {
	if c.r != nil {
		c.ev = Event{}
		c.r.marks = c.marks[:0]
		c.marks = nil
		readerPool.Put(c.r)
		c.r = nil
	}
}

const (
	lnStart   uint8 = iota // at the start of a line
	lnField                // reading a field name
	lnSpace                // after the colon: one space may follow
	lnValue                // reading a field's value
	lnSkip                 // a comment: skip to the end of the line
	lnAfterCR              // after a CR, which a LF may complete
)

const (
	fOther uint8 = iota
	fData
	fEvent
)

// NewStreamCheck returns a check for a stream in dialect d.
func NewStreamCheck(d Dialect) StreamCheck { return StreamCheck{dialect: d} }

// Facts are what the stream has said so far.
func (c *StreamCheck) Facts() *StreamFacts { return &c.facts }

// Last is the last dispatched event's record (valid until the next
// Feed, End or Release).
func (c *StreamCheck) Last() *Event { return &c.ev }

// CaptureText appends every text delta (choice 0, text blocks) to *buf
// as its event is dispatched; nil stops it.
func (c *StreamCheck) CaptureText(buf *[]byte) { c.capture = buf }

// Stream verdicts, as End reports them (and log reasons use).
const (
	StreamOK           = ""
	StreamUnterminated = "stream_unterminated" // ended without [DONE] or message_stop
	StreamMalformed    = "stream_malformed"    // an event whose data is not JSON
	StreamErrorEvent   = "stream_error_event"  // the provider sent an error event
)

// Feed scans the next chunk. boundary is the offset in p just past the
// last complete event in it (its terminating blank line), or -1 if no
// event ended in p. ok is false once an event has proved malformed; then
// badStart is where that event began in p, or -1 if it began in an
// earlier chunk, and Feed scans nothing more.
func (c *StreamCheck) Feed(p []byte) (boundary int, ok bool, badStart int) {
	boundary, badStart = -1, -1
	if c.bad {
		return boundary, false, badStart
	}
	base := c.fed
	c.fed += int64(len(p))
	evStart := -1
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch c.st {
		case lnAfterCR:
			c.st = lnStart
			if b == '\n' {
				continue
			}
			i-- // a lone CR ended the line; rescan b at a line start
			continue
		case lnStart:
			if b == '\n' || b == '\r' {
				// A blank line dispatches the event.
				if c.begun {
					if c.head && b == '\r' && i+1 == len(p) {
						// Half of a CRLF, perhaps: where the event
						// ends is not known yet.
						return boundary, true, -1
					}
					ok := c.dispatch()
					if c.head && c.ev.Token() {
						c.headToken = true
						return boundary, true, -1
					}
					if !ok && !c.lenient {
						return boundary, false, evStart
					}
				}
				if b == '\r' {
					c.st = lnAfterCR
				}
				boundary, evStart = i+1, -1
				if b == '\r' && i+1 < len(p) && p[i+1] == '\n' {
					boundary = i + 2
				}
				if n := len(c.marks); n > 0 && c.marks[n-1].End < 0 {
					c.marks[n-1].End = base + int64(boundary)
				}
				continue
			}
			if !c.begun {
				c.begun, evStart = true, i
			}
			if b == ':' {
				c.st = lnSkip
				continue
			}
			c.st, c.fieldN = lnField, 0
			i--
		case lnField:
			if b == ':' || b == '\n' || b == '\r' {
				c.kind = fOther
				if int(c.fieldN) <= len(c.field) {
					c.kind = fieldKind(c.field[:c.fieldN])
				}
				switch c.kind {
				case fData:
					c.startData()
				case fEvent:
					c.nameN = 0 // the last event: line names the event
				}
				if b == ':' {
					c.st = lnSpace
					continue
				}
				c.endLine(b)
				continue
			}
			if int(c.fieldN) < len(c.field) {
				c.field[c.fieldN] = b
			}
			if c.fieldN < 255 {
				c.fieldN++
			}
		case lnSpace:
			c.st = lnValue
			if b == ' ' {
				continue
			}
			i--
		case lnValue:
			// Take the rest of the value in one slice.
			j := i
			for j < len(p) && p[j] != '\n' && p[j] != '\r' {
				j++
			}
			c.value(p[i:j])
			if j == len(p) {
				i = j
				continue
			}
			c.endLine(p[j])
			i = j
		case lnSkip:
			if b == '\n' {
				c.st = lnStart
			} else if b == '\r' {
				c.st = lnAfterCR
			}
		}
	}
	return boundary, true, -1
}

// endLine ends a field line at b, a CR or LF.
func (c *StreamCheck) endLine(b byte) {
	if b == '\r' {
		c.st = lnAfterCR
	} else {
		c.st = lnStart
	}
}

func fieldKind(name []byte) uint8 {
	switch string(name) {
	case "data":
		return fData
	case "event":
		return fEvent
	}
	return fOther
}

// startData begins a data line: a second one is joined to the first by a
// newline, which JSON reads as whitespace.
func (c *StreamCheck) startData() {
	if c.hasData {
		c.appendData(newline)
	}
	c.hasData = true
}

var newline = []byte{'\n'}

func (c *StreamCheck) value(v []byte) {
	switch c.kind {
	case fData:
		c.appendData(v)
	case fEvent:
		// A name longer than maxName is kept cut: none that means
		// anything is that long.
		c.nameN += copy(c.name[c.nameN:], v)
	}
}

// appendData adds to the event's data.
func (c *StreamCheck) appendData(v []byte) {
	c.dataLen += len(v)
	if c.over {
		c.json.Write(v)
		return
	}
	r := c.reader()
	if len(r.data)+len(v) <= MaxEventData {
		r.data = append(r.data, v...)
		return
	}
	c.over = true
	c.json.Write(r.data)
	c.json.Write(v)
}

// dispatch reads the event a blank line just ended, folds it into the
// facts, and readies the next. It reports false for a malformed event.
func (c *StreamCheck) dispatch() bool {
	name := c.name[:c.nameN]
	counted := c.hasData && c.dataLen > 0
	if c.over {
		c.facts.UnreadBytes += c.dataLen
	}
	switch {
	case c.over:
		// Read by its name only; its data was judged as it came.
		c.r.p.Parse(c.dialect, c.responses, name, nil, &c.ev)
		c.ev.Invalid, c.ev.other, c.ev.Head, c.ev.Keepalive = !c.json.Done(), true, false, false
		c.facts.Unread = true
	case c.hasData && c.dataLen > 0:
		c.r.p.Parse(c.dialect, c.responses, name, c.r.data, &c.ev)
	default:
		c.reader().p.Parse(c.dialect, c.responses, name, nil, &c.ev)
	}
	c.begun, c.hasData, c.dataLen, c.over, c.nameN = false, false, 0, false, 0
	if c.r != nil {
		c.r.data = c.r.data[:0]
	}
	c.json.Reset()
	if c.ev.Invalid {
		if !c.lenient {
			c.bad = true
		}
		return false
	}
	c.facts.fold(&c.ev, counted)
	c.terminated = c.terminated || c.ev.Done
	c.upstreamErr = c.upstreamErr || c.ev.Error
	if c.capture != nil && len(c.ev.Text) > 0 {
		*c.capture = append(*c.capture, c.ev.Text...)
	}
	if c.keepMarks {
		c.mark()
	}
	if c.onEvent != nil {
		c.onEvent(c.ev)
	}
	return true
}

// End judges the stream at its end: StreamOK, or why it failed. An event
// cut short by the end (no blank line after it) is judged as if it had
// one, so a terminator sent without its trailing blank line still ends
// the stream properly.
func (c *StreamCheck) End() string {
	if !c.bad && c.begun {
		c.dispatch()
	}
	switch {
	case c.bad:
		return StreamMalformed
	case c.upstreamErr:
		return StreamErrorEvent
	case !c.terminated:
		return StreamUnterminated
	}
	return StreamOK
}

// pendingFacts are the facts as End would leave them, with an event cut
// short by the end read, without ending the check. It reuses the
// parser, so Last is not valid after it.
func (c *StreamCheck) pendingFacts() StreamFacts {
	f := c.facts
	if !c.begun || c.bad || c.over {
		return f
	}
	var data []byte
	r := c.reader()
	if c.hasData {
		data = r.data
	}
	var ev Event
	r.p.Parse(c.dialect, c.responses, c.name[:c.nameN], data, &ev)
	if !ev.Invalid {
		f.fold(&ev, len(data) > 0)
	}
	return f
}

// Terminated reports whether the terminator has been seen.
func (c *StreamCheck) Terminated() bool { return c.terminated }

// UpstreamError reports whether the provider sent an error event of its
// own, which a relay passes on instead of adding one.
func (c *StreamCheck) UpstreamError() bool { return c.upstreamErr }
