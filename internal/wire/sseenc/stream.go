package sseenc

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Stream writes one stream's events in an Encoding. It counts them, for
// idretry's ids and comments' placement, and draws shuffle's key order
// from its source. Not safe for concurrent use.
type Stream struct {
	e   Encoding
	rnd *rand.Rand
	n   int
}

// Stream starts a stream in e. rnd is the source shuffle draws from; nil
// is a fixed seed, so a stream replays the same bytes.
func (e Encoding) Stream(rnd *rand.Rand) *Stream {
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(0x5ee, 0xe4c))
	}
	return &Stream{e: e, rnd: rnd}
}

// Encoding is the stream's encoding.
func (s *Stream) Encoding() Encoding { return s.e }

// AppendEvent appends one event to dst: its name (may be empty; it must
// hold no line break, or AppendEvent panics with ErrLineBreak) and its
// data, a JSON value or anything else ([DONE]). JSON is rewritten in the
// encoding's layout, key order and escapes, and decodes to the same value
// as data; other data is written as it came, one data: line per line.
// With the compact default, the event is exactly "event: NAME\n" (when
// named) "data: DATA\n\n".
func (s *Stream) AppendEvent(dst []byte, name string, data []byte) []byte {
	if strings.ContainsAny(name, "\r\n") {
		panic(ErrLineBreak)
	}
	e, eol := s.e, s.e.LineEnd()
	n := s.n
	s.n++
	if e.idRetry && n == 0 {
		dst = s.field(dst, "retry", "3000")
	}
	if e.comments && n > 0 {
		// Both kinds of comment a reader must skip: a block of its own,
		// and a line inside the event before its fields.
		if n%2 == 1 {
			dst = s.AppendComment(dst)
		} else {
			dst = append(append(dst, ":processing"...), eol...)
		}
	}
	switch {
	case e.noEvent:
	case name != "":
		dst = s.field(dst, "event", name)
	case e.oaiEvent:
		dst = s.field(dst, "event", "message")
	}
	if e.idRetry {
		dst = s.field(dst, "id", strconv.Itoa(n+1))
	}
	if e.reencodes() {
		if v, ok := parseJSON(data); ok {
			w := jsonWriter{e: e, rnd: s.rnd}
			w.value(&v, 0)
			data = w.b
		}
	}
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			dst = s.field(dst, "data", string(data))
			break
		}
		dst = s.field(dst, "data", string(data[:i]))
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(dst, eol...)
}

// field writes one "name: value" line. Without its space, a value that
// starts with one would lose it to the reader, so it keeps the space.
func (s *Stream) field(dst []byte, name, value string) []byte {
	dst = append(append(dst, name...), ':')
	if !s.e.noSpace || strings.HasPrefix(value, " ") {
		dst = append(dst, ' ')
	}
	return append(append(dst, value...), s.e.LineEnd()...)
}

// AppendComment appends a comment block (": keepalive" and a blank
// line), what servers send to keep an idle connection open.
func (s *Stream) AppendComment(dst []byte) []byte {
	c := ": keepalive"
	if s.e.noSpace {
		c = ":keepalive"
	}
	eol := s.e.LineEnd()
	return append(append(append(dst, c...), eol...), eol...)
}
