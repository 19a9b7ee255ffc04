package translate

import "bytes"

// Event is one server-sent event: its event: name (Anthropic names every
// event, OpenAI none) and its data, its data: lines joined by "\n".
type Event struct {
	Name string
	Data []byte
}

// ParseEvents reads the complete events in p: those ended by a blank
// line. It returns them and n, the bytes they took, so that a caller
// holding a partial event keeps p[n:] for the next read. Comment lines
// and fields other than event and data are skipped, and so is an event
// with neither. The events' Data are copies.
func ParseEvents(p []byte) (events []Event, n int) {
	var cur Event
	var data [][]byte
	begun := false
	for i := 0; i < len(p); {
		end := bytes.IndexAny(p[i:], "\r\n")
		if end < 0 {
			break // a line without its end: the event is not complete
		}
		line := p[i : i+end]
		next := i + end + 1
		// A CR at the very end may be half of a CRLF whose LF comes in
		// the next read; that LF then reads as a blank line before any
		// field, which ends nothing.
		if p[i+end] == '\r' && next < len(p) && p[next] == '\n' {
			next++
		}
		i = next
		if len(line) == 0 {
			if begun {
				if len(data) > 0 {
					cur.Data = bytes.Join(data, []byte("\n"))
				}
				if cur.Name != "" || cur.Data != nil {
					events = append(events, cur)
				}
			}
			cur, data, begun, n = Event{}, nil, false, i
			continue
		}
		begun = true
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			cur.Name = string(value)
		case "data":
			data = append(data, value)
		}
	}
	return events, n
}

// AppendEvent appends ev to dst in SSE form, ended by its blank line.
func AppendEvent(dst []byte, ev Event) []byte {
	if ev.Name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, ev.Name...)
		dst = append(dst, '\n')
	}
	for line := range bytes.SplitSeq(ev.Data, []byte("\n")) {
		dst = append(dst, "data: "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
	}
	return append(dst, '\n')
}

// Encode returns events in SSE form.
func Encode(events []Event) []byte {
	var out []byte
	for _, ev := range events {
		out = AppendEvent(out, ev)
	}
	return out
}

var doneData = []byte("[DONE]")
