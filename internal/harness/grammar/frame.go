package grammar

import (
	"bytes"
	"strconv"
	"strings"
)

// Event is one event as a reader following the SSE specification
// dispatches it.
type Event struct {
	// Index is the event's place among the dispatched events, from 0.
	Index int
	// Name is the event: field's value; Named says the event had one (an
	// empty "event:" is still a field).
	Name  string
	Named bool
	// Data is the data: lines' values joined by "\n".
	Data string
	// Offset is where the event's first line begins in the stream.
	Offset int
}

// Frame reads stream as the specification's event-stream interpretation
// does (HTML Living Standard, server-sent events): one leading byte
// order mark is dropped; lines end in CRLF, LF or a lone CR; a line
// starting with ':' is a comment; a line without a colon is a field
// with an empty value; a field's value loses one leading space; data
// lines are joined with "\n"; id: and retry: are read and left; other
// fields are ignored; a blank line dispatches the event, unless it has
// no data. What a reader would drop is an error: an event, or a field
// line, the stream does not end with its blank line.
func Frame(stream []byte) ([]Event, error) {
	stream = bytes.TrimPrefix(stream, []byte("\xef\xbb\xbf"))
	var (
		events  []Event
		cur     Event
		data    strings.Builder
		hasData bool
		begun   bool // the event has a line of its own (a field or a comment)
	)
	reset := func() {
		cur, hasData, begun = Event{}, false, false
		data.Reset()
	}
	pos := 0
	for pos < len(stream) {
		rest := stream[pos:]
		i := bytes.IndexAny(rest, "\r\n")
		if i < 0 {
			// The last line has no line end: a reader never completes
			// it, and what it began is lost.
			if hasData || !bytes.HasPrefix(rest, []byte(":")) {
				return events, &Violation{Index: len(events), Rule: RuleFraming,
					Detail: "the stream ends inside an event (no line end and blank line after " + quoteLine(rest) + "): a reader drops it"}
			}
			return events, nil
		}
		line := rest[:i]
		next := i + 1
		if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
			next++
		}
		if !begun {
			cur.Offset, begun = pos, true
		}
		pos += next
		switch {
		case len(line) == 0:
			if hasData {
				cur.Index, cur.Data = len(events), strings.TrimSuffix(data.String(), "\n")
				events = append(events, cur)
			}
			reset()
		case line[0] == ':':
			// A comment.
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				cur.Name, cur.Named = string(value), true
			case "data":
				data.Write(value)
				data.WriteByte('\n')
				hasData = true
			}
		}
	}
	if hasData {
		return events, &Violation{Index: len(events), Rule: RuleFraming,
			Detail: "the stream ends inside an event (no blank line after its last data: line): a reader drops it"}
	}
	return events, nil
}

func quoteLine(b []byte) string {
	const most = 60
	if len(b) > most {
		return strconv.Quote(string(b[:most])) + "…"
	}
	return strconv.Quote(string(b))
}
