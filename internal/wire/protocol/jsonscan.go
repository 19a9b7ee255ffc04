package protocol

// JSONScanner checks, as bytes arrive in chunks of any size, that they
// form exactly one well-formed JSON value: the test encoding/json's Valid
// applies to a whole buffer, made incremental so that a response can be
// relayed as it arrives and still be judged, with no copy of it kept. It
// allocates nothing: the nesting is a bit stack of MaxJSONDepth levels.
//
// The zero value is ready to scan one value; Reset readies it for the
// next.
type JSONScanner struct {
	state  uint8
	after  uint8 // for sLiteral and strings: the state once it ends
	lit    uint8 // which literal (litTrue, ...) and
	litPos uint8 // how much of it has matched
	hex    uint8 // \u escapes: hex digits still to come
	depth  uint16
	// kinds is a bit per nesting level: 1 for an object, 0 for an array.
	kinds [MaxJSONDepth / 64]uint64
	// n counts bytes scanned, for Offset.
	n int64
}

// MaxJSONDepth bounds nesting. No model API answer comes near it; a
// deeper document is reported invalid rather than tracked without bound.
const MaxJSONDepth = 512

const (
	sValue    uint8 = iota // a value must come (the start, after ':' or ',' in an array)
	sArrFirst              // after '[': a value or ']'
	sObjFirst              // after '{': a key or '}'
	sObjKey                // after ',' in an object: a key
	sColon                 // after a key
	sAfter                 // after a value: ',' or a closer, or the end
	sString                // inside a string
	sEscape                // after a backslash in a string
	sHex                   // inside \uXXXX
	sLiteral               // inside true, false or null
	sMinus                 // after a leading '-'
	sZero                  // after a leading 0
	sInt                   // in the integer digits
	sDot                   // after '.'
	sFrac                  // in the fraction digits
	sE                     // after 'e' or 'E'
	sESign                 // after the exponent's sign
	sExp                   // in the exponent digits
	sDone                  // the value is complete: only whitespace may follow
	sError
)

var literals = [3]string{"true", "false", "null"}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Reset readies the scanner for a new value.
func (s *JSONScanner) Reset() { *s = JSONScanner{} }

// Write scans the next chunk. It returns false once the input can no
// longer be valid JSON (and keeps returning false).
func (s *JSONScanner) Write(p []byte) bool {
	if s.state == sError {
		return false
	}
	for i := 0; i < len(p); i++ {
		// Runs of string bytes and digits, most of any answer, skip the
		// state machine.
		switch s.state {
		case sString:
			for i < len(p) && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20 {
				i++
			}
		case sInt, sFrac, sExp:
			for i < len(p) && p[i]-'0' < 10 {
				i++
			}
		}
		if i == len(p) {
			break
		}
		if !s.step(p[i]) {
			s.state = sError
			s.n += int64(i)
			return false
		}
	}
	s.n += int64(len(p))
	return true
}

// Done reports whether the bytes so far are one whole JSON value (a
// number is whole once its input ends).
func (s *JSONScanner) Done() bool {
	switch s.state {
	case sDone:
		return true
	case sZero, sInt, sFrac, sExp:
		return s.depth == 0
	}
	return false
}

// Failed reports whether the input is already invalid.
func (s *JSONScanner) Failed() bool { return s.state == sError }

// Offset is how many bytes have been scanned (up to the error, if any).
func (s *JSONScanner) Offset() int64 { return s.n }

func (s *JSONScanner) push(object bool) bool {
	if s.depth >= MaxJSONDepth {
		return false
	}
	w, b := s.depth/64, s.depth%64
	if object {
		s.kinds[w] |= 1 << b
	} else {
		s.kinds[w] &^= 1 << b
	}
	s.depth++
	return true
}

// top reports whether the innermost open container is an object.
func (s *JSONScanner) top() bool {
	d := s.depth - 1
	return s.kinds[d/64]&(1<<(d%64)) != 0
}

// endValue moves on after a complete value.
func (s *JSONScanner) endValue() {
	if s.depth == 0 {
		s.state = sDone
	} else {
		s.state = sAfter
	}
}

// value starts a value at c.
func (s *JSONScanner) value(c byte) bool {
	switch {
	case c == '{':
		s.state = sObjFirst
		return s.push(true)
	case c == '[':
		s.state = sArrFirst
		return s.push(false)
	case c == '"':
		s.state, s.after = sString, sAfter
	case c == '-':
		s.state = sMinus
	case c == '0':
		s.state = sZero
	case c >= '1' && c <= '9':
		s.state = sInt
	case c == 't' || c == 'f' || c == 'n':
		s.state, s.litPos, s.lit = sLiteral, 1, 0
		switch c {
		case 'f':
			s.lit = 1
		case 'n':
			s.lit = 2
		}
	default:
		return false
	}
	return true
}

// close handles '}' or ']' where a container may end.
func (s *JSONScanner) close(c byte) bool {
	if s.depth == 0 || (c == '}') != s.top() {
		return false
	}
	s.depth--
	s.endValue()
	return true
}

func (s *JSONScanner) step(c byte) bool {
	switch s.state {
	case sValue:
		if isSpace(c) {
			return true
		}
		return s.value(c)
	case sArrFirst:
		if isSpace(c) {
			return true
		}
		if c == ']' {
			return s.close(c)
		}
		return s.value(c)
	case sObjFirst, sObjKey:
		switch {
		case isSpace(c):
			return true
		case c == '"':
			s.state, s.after = sString, sColon
			return true
		case c == '}' && s.state == sObjFirst:
			return s.close(c)
		}
		return false
	case sColon:
		if isSpace(c) {
			return true
		}
		if c == ':' {
			s.state = sValue
			return true
		}
		return false
	case sAfter:
		switch {
		case isSpace(c):
			return true
		case c == ',':
			if s.top() {
				s.state = sObjKey
			} else {
				s.state = sValue
			}
			return true
		case c == '}' || c == ']':
			return s.close(c)
		}
		return false
	case sString:
		switch {
		case c == '"':
			if s.after == sColon {
				s.state = sColon
			} else {
				s.endValue()
			}
		case c == '\\':
			s.state = sEscape
		case c < 0x20:
			return false
		}
		return true
	case sEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.state = sString
		case 'u':
			s.state, s.hex = sHex, 4
		default:
			return false
		}
		return true
	case sHex:
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
		if s.hex--; s.hex == 0 {
			s.state = sString
		}
		return true
	case sLiteral:
		lit := literals[s.lit]
		if c != lit[s.litPos] {
			return false
		}
		if s.litPos++; int(s.litPos) == len(lit) {
			s.endValue()
		}
		return true
	case sMinus:
		switch {
		case c == '0':
			s.state = sZero
		case c >= '1' && c <= '9':
			s.state = sInt
		default:
			return false
		}
		return true
	case sZero, sInt:
		switch {
		case c >= '0' && c <= '9' && s.state == sInt:
			return true
		case c == '.':
			s.state = sDot
			return true
		case c == 'e' || c == 'E':
			s.state = sE
			return true
		}
		return s.endNumber(c)
	case sDot:
		if c >= '0' && c <= '9' {
			s.state = sFrac
			return true
		}
		return false
	case sFrac:
		switch {
		case c >= '0' && c <= '9':
			return true
		case c == 'e' || c == 'E':
			s.state = sE
			return true
		}
		return s.endNumber(c)
	case sE:
		switch {
		case c == '+' || c == '-':
			s.state = sESign
		case c >= '0' && c <= '9':
			s.state = sExp
		default:
			return false
		}
		return true
	case sESign:
		if c >= '0' && c <= '9' {
			s.state = sExp
			return true
		}
		return false
	case sExp:
		if c >= '0' && c <= '9' {
			return true
		}
		return s.endNumber(c)
	case sDone:
		return isSpace(c)
	}
	return false
}

// endNumber ends a number at c, the first byte after it, and scans c in
// the state that follows.
func (s *JSONScanner) endNumber(c byte) bool {
	s.endValue()
	return s.step(c)
}
