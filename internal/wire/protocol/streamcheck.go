package protocol

import "bytes"

// StreamCheck judges an SSE stream as it is relayed, in whatever chunks
// it arrives: every event's data must be one JSON value (or OpenAI's
// [DONE]), and the stream must end with its dialect's terminator, [DONE]
// for OpenAI and message_stop for Anthropic. A provider that closes the
// stream early, or streams garbage under a 200, has failed, however
// healthy its status line looked.
//
// It also finds event boundaries, so a relay can pass on whole events
// only: a client never sees half of an event that turns out to be
// corrupt. It keeps a few fixed arrays and allocates nothing.
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
	json    JSONScanner
	head    [48]byte // the start of its data, to read its type
	headN   uint8
	name    [24]byte // its event: name
	nameN   uint8

	terminated  bool // the dialect's terminator has been seen
	upstreamErr bool // the provider sent an error event
	bad         bool // an event was not well-formed
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
					if !c.dispatch() {
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
				if c.kind == fData {
					c.startData()
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
		c.json.Write(newline)
		c.dataLen++
		c.appendHead(newline)
	}
	c.hasData = true
}

var newline = []byte{'\n'}

func (c *StreamCheck) appendHead(v []byte) {
	n := copy(c.head[c.headN:], v)
	c.headN += uint8(n)
}

func (c *StreamCheck) value(v []byte) {
	switch c.kind {
	case fData:
		c.json.Write(v)
		c.dataLen += len(v)
		c.appendHead(v)
	case fEvent:
		n := copy(c.name[c.nameN:], v)
		c.nameN += uint8(n)
	}
}

var (
	doneData     = []byte("[DONE]")
	stopType     = [][]byte{[]byte(`"type":"message_stop"`), []byte(`"type": "message_stop"`)}
	errorType    = [][]byte{[]byte(`"type":"error"`), []byte(`"type": "error"`)}
	openAIErrors = [][]byte{[]byte(`{"error":`), []byte(`{"error" :`), []byte(`{ "error":`)}
)

// dispatch judges the event a blank line just ended, and readies the
// next. It reports false for a malformed event.
func (c *StreamCheck) dispatch() bool {
	head, name := c.head[:c.headN], c.name[:c.nameN]
	ok := true
	if c.responses {
		if c.hasData && c.dataLen > 0 && !(c.dataLen == len(doneData) && bytes.Equal(head, doneData)) && !c.json.Done() {
			ok, c.bad = false, true
		} else {
			c.dispatchResponses(name, head)
		}
		c.begun, c.hasData, c.dataLen, c.headN, c.nameN = false, false, 0, 0, 0
		c.json.Reset()
		return ok
	}
	if c.hasData && c.dataLen > 0 {
		switch {
		case c.dataLen == len(doneData) && bytes.Equal(head, doneData):
			if c.dialect == OpenAI {
				c.terminated = true
			}
		case !c.json.Done():
			ok, c.bad = false, true
		case c.dialect == Anthropic:
			if containsAny(head, stopType) {
				c.terminated = true
			}
			if containsAny(head, errorType) {
				c.upstreamErr = true
			}
		default:
			if containsAny(head, openAIErrors) {
				c.upstreamErr = true
			}
		}
	}
	switch string(name) {
	case "message_stop":
		c.terminated = c.terminated || c.dialect == Anthropic
	case "error":
		c.upstreamErr = true
	}
	c.begun, c.hasData, c.dataLen, c.headN, c.nameN = false, false, 0, 0, 0
	c.json.Reset()
	return ok
}

func containsAny(b []byte, subs [][]byte) bool {
	for _, s := range subs {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
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

// Terminated reports whether the terminator has been seen.
func (c *StreamCheck) Terminated() bool { return c.terminated }

// UpstreamError reports whether the provider sent an error event of its
// own, which a relay passes on instead of adding one.
func (c *StreamCheck) UpstreamError() bool { return c.upstreamErr }
