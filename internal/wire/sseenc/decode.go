package sseenc

import "strings"

// Event is one event as a reader following the SSE specification
// dispatches it.
type Event struct {
	Name string // the event: field; "" when it had none
	Data string // the data: lines joined by "\n"
	ID   string // the last id: field so far
}

// Decode reads a whole stream the way the specification's event-stream
// interpretation does (HTML Living Standard, server-sent events): lines
// end in CRLF, LF or a lone CR; a line starting with ':' is a comment; a
// field's value loses one leading space; data lines are joined with
// "\n"; a blank line dispatches the event, unless it has no data; an
// event not ended by a blank line is dropped. comments counts the comment
// lines. It is the reference the package's tests and the mock's judge
// written streams by, kept plain rather than fast.
func Decode(stream string) (events []Event, comments int) {
	var name, id string
	var data strings.Builder
	hasData := false
	for {
		i := strings.IndexAny(stream, "\r\n")
		if i < 0 {
			return events, comments // what is left was never ended
		}
		line := stream[:i]
		if stream[i] == '\r' && i+1 < len(stream) && stream[i+1] == '\n' {
			i++
		}
		stream = stream[i+1:]
		if line == "" {
			if hasData {
				events = append(events, Event{Name: name, Data: strings.TrimSuffix(data.String(), "\n"), ID: id})
			}
			name, hasData = "", false
			data.Reset()
			continue
		}
		if line[0] == ':' {
			comments++
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
}
