package gateway

import (
	"bytes"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// How eventScrub reads an event: SSE framing (any line ending: CR, LF,
// CRLF), the event's data (its data lines joined by "\n"), and the
// strings of the data's JSON, each with the path it is at.

// mayBegin reports whether p could need reading: it has an escape that
// could spell a byte of a secret (k.risky), a whole secret, or a string
// that ends with a secret's start. It answers from the bytes, with no
// grammar, and may say yes where reading finds nothing; never no where
// reading would find something, for text whose escapes are not risky
// reads the same decoded as raw. An object name that ends with a
// secret's start (`"choices":` for a key that begins with s) is not
// text, so it is not a start.
func (k *keyScrub) mayBegin(p []byte) bool {
	for i := bytes.IndexByte(p, '\\'); i >= 0; {
		if i+1 >= len(p) || strings.IndexByte(k.risky, p[i+1]) >= 0 {
			return true
		}
		j := bytes.IndexByte(p[i+2:], '\\')
		if j < 0 {
			break
		}
		i += 2 + j
	}
	for i := 0; i < len(p); i++ {
		if !k.begins(p[i]) {
			continue
		}
		for _, key := range k.bucket(p[i]) {
			for l := 1; l <= len(key) && i+l <= len(p) && p[i+l-1] == key[l-1]; l++ {
				if l == len(key) {
					return true
				}
				if i+l < len(p) && p[i+l] == '"' && !nameEnd(p, i+l+1) {
					return true
				}
			}
		}
	}
	return false
}

// nameEnd reports whether a colon follows p[i:], after blanks: the
// string that just closed was an object's name.
func nameEnd(p []byte, i int) bool {
	for i < len(p) && (p[i] == ' ' || p[i] == '\t') {
		i++
	}
	return i < len(p) && p[i] == ':'
}

var (
	lfLF      = []byte("\n\n")
	dataField = []byte("data")
	doneData  = []byte("[DONE]")
)

// sseEventEnd is the length of b's first event with the blank line that
// ends it, or all of b. cr says b holds a CR somewhere; without one, an
// event ends at "\n\n".
func sseEventEnd(b []byte, cr bool) int {
	if !cr {
		if len(b) > 0 && b[0] == '\n' {
			return 1
		}
		if i := bytes.Index(b, lfLF); i >= 0 {
			return i + 2
		}
		return len(b)
	}
	for i, line := 0, 0; i < len(b); {
		c := b[i]
		if c != '\n' && c != '\r' {
			i++
			continue
		}
		end := i
		i++
		if c == '\r' && i < len(b) && b[i] == '\n' {
			i++
		}
		if end == line {
			return i
		}
		line = i
	}
	return len(b)
}

// dataOf is event e's data: its data lines' values joined by "\n" (a
// line "data:v" or "data: v"), with s.r.lines saying where each is in e.
// ok is false when e has no data line.
func (s *eventScrub) dataOf(e []byte) (data []byte, ok bool) {
	s.r.lines = s.r.lines[:0]
	n := 0
	for i := 0; i < len(e); {
		end := i
		for end < len(e) && e[end] != '\n' && e[end] != '\r' {
			end++
		}
		line := e[i:end]
		if v, ok := bytes.CutPrefix(line, dataField); ok && (len(v) == 0 || v[0] == ':') {
			at := i + 4
			if len(v) > 0 {
				at++
				if len(v) > 1 && v[1] == ' ' {
					at++
				}
			}
			s.r.lines = append(s.r.lines, dataLine{data: n, ev: at, n: end - at})
			n += end - at + 1
		}
		i = end + 1
		if end+1 < len(e) && e[end] == '\r' && e[end+1] == '\n' {
			i++
		}
	}
	switch len(s.r.lines) {
	case 0:
		return nil, false
	case 1:
		l := s.r.lines[0]
		return e[l.ev : l.ev+l.n], true
	}
	s.r.data = s.r.data[:0]
	for i, l := range s.r.lines {
		if i > 0 {
			s.r.data = append(s.r.data, '\n')
		}
		s.r.data = append(s.r.data, e[l.ev:l.ev+l.n]...)
	}
	return s.r.data, true
}

// toEvent is where span sp of the data is in the event. A JSON string
// holds no line break, so it is within one data line.
func (s *eventScrub) toEvent(sp span) span {
	l := s.r.lines[0]
	for _, m := range s.r.lines[1:] {
		if m.data > sp.s {
			break
		}
		l = m
	}
	d := l.ev - l.data
	return span{sp.s + d, sp.e + d}
}

// parse reads data's JSON: every string in it goes to s.r.spans (where it
// is in data) and s.r.meta (its path, or that it is a name). It reports
// false when data is not JSON, or not an object or array: the strings
// read before a fault are dropped by the caller, and the event is then
// scrubbed by its bytes.
func (s *eventScrub) parse(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\n\r")
	if len(t) == 0 || t[0] != '{' && t[0] != '[' || bytes.HasPrefix(t, doneData) {
		return false
	}
	s.r.rd.Reset(data)
	if s.r.dec == nil {
		s.r.dec = jsontext.NewDecoder(&s.r.rd, scrubDecodeOpts...)
	} else {
		s.r.dec.Reset(&s.r.rd, scrubDecodeOpts...)
	}
	s.r.stack = s.r.stack[:0]
	for started := false; !started || len(s.r.stack) > 0; started = true {
		var top *frame
		if len(s.r.stack) > 0 {
			top = &s.r.stack[len(s.r.stack)-1]
		}
		switch kind := s.r.dec.PeekKind(); kind {
		case '{', '[':
			path := valuePath(top)
			if _, err := s.r.dec.ReadToken(); err != nil {
				return false
			}
			s.r.stack = append(s.r.stack, frame{h: path, arr: kind == '[', wantName: kind == '{'})
		case '}', ']':
			if _, err := s.r.dec.ReadToken(); err != nil {
				return false
			}
			s.r.stack = s.r.stack[:len(s.r.stack)-1]
			afterValue(s.r.stack)
		case '"':
			v, err := s.r.dec.ReadValue()
			if err != nil {
				return false
			}
			end := int(s.r.dec.InputOffset())
			s.r.spans = append(s.r.spans, span{end - len(v), end})
			if top != nil && !top.arr && top.wantName {
				s.r.name = appendDecoded(s.r.name[:0], v[1:len(v)-1])
				top.member = mixBytes(mixByte(top.h, '.'), s.r.name)
				top.wantName = false
				s.r.meta = append(s.r.meta, strMeta{name: true})
				continue
			}
			s.r.meta = append(s.r.meta, strMeta{path: valuePath(top)})
			afterValue(s.r.stack)
		case 0:
			return false
		default:
			if err := s.r.dec.SkipValue(); err != nil {
				return false
			}
			afterValue(s.r.stack)
		}
	}
	return true
}

// A path is a hash of the names and array positions from the top:
// FNV-1a over them.
const (
	pathRoot  uint64 = 14695981039346656037
	pathPrime uint64 = 1099511628211
)

func mixByte(h uint64, c byte) uint64 { return (h ^ uint64(c)) * pathPrime }

func mixBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = mixByte(h, c)
	}
	return h
}

// valuePath is the path of the value that comes next in top.
func valuePath(top *frame) uint64 {
	switch {
	case top == nil:
		return pathRoot
	case top.arr:
		h := mixByte(top.h, '[')
		for i := top.idx; ; i >>= 8 {
			h = mixByte(h, byte(i))
			if i < 256 {
				return h
			}
		}
	}
	return top.member
}

// afterValue moves the innermost open object or array past a value.
func afterValue(stack []frame) {
	if len(stack) == 0 {
		return
	}
	top := &stack[len(stack)-1]
	if top.arr {
		top.idx++
	} else {
		top.wantName = true
	}
}
