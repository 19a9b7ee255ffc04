package tokens

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner walks a JSON body in place. Request needs a handful of string
// values out of a body that is mostly those strings, so instead of
// decoding the body into Go values it steps over the bytes once,
// validating as it goes, and hands back the position of each string it is
// asked for: nothing is copied and nothing is allocated. It accepts
// exactly what encoding/json's Valid accepts, nesting limit included, so
// "not JSON" means the same here as everywhere else in Sluice.
//
// A syntax error sets bad and moves to the end of the input, where every
// method stops, so callers check bad once, at the end.
type scanner struct {
	b     []byte
	i     int
	depth int
	bad   bool
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

func (s *scanner) fail() {
	s.bad = true
	s.i = len(s.b)
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// open consumes c ('{' or '[') if it comes next, and reports whether it
// did.
func (s *scanner) open(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	if s.depth++; s.depth > maxDepth {
		s.fail()
		return false
	}
	return true
}

// more reports whether the object or array just opened has another
// member, consuming the comma before it, or the closing byte after the
// last. first is true until the first call.
func (s *scanner) more(closer byte, first *bool) bool {
	c := s.peek()
	if c == closer {
		s.i++
		s.depth--
		return false
	}
	if *first {
		*first = false
		if c == 0 {
			s.fail()
		}
		return c != 0
	}
	if c == ',' {
		s.i++
		return true
	}
	s.fail()
	return false
}

// key reads an object key and the colon after it.
func (s *scanner) key() span {
	if s.peek() != '"' {
		s.fail()
		return span{}
	}
	k := s.str()
	if s.peek() != ':' {
		s.fail()
		return span{}
	}
	s.i++
	return k
}

// span is a JSON string's content between its quotes: b[start:end].
type span struct {
	start, end int
	// esc: the content has backslash escapes, so it is not the string's
	// text byte for byte.
	esc bool
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain reports whether none of the 8 bytes in x ends a run of plain
// string content: a quote, a backslash or a control byte. It is the
// usual word-at-a-time test for a byte below n, and for a zero byte
// after XOR, which is exact about whether such a byte exists.
func plain(x uint64) bool {
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs == 0
}

// str reads a string whose opening quote is next.
func (s *scanner) str() span {
	b := s.b
	sp := span{start: s.i + 1}
	i := sp.start
	for {
		// Prose is long runs of plain bytes: step over them 8 at a time.
		for i+8 <= len(b) && plain(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
			i++
		}
		if i == len(b) {
			s.fail()
			return span{}
		}
		switch b[i] {
		case '"':
			sp.end = i
			s.i = i + 1
			return sp
		case '\\':
			sp.esc = true
			i++
			if i == len(b) {
				s.fail()
				return span{}
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 > len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					s.fail()
					return span{}
				}
				i += 5
			default:
				s.fail()
				return span{}
			}
		default: // a control byte
			s.fail()
			return span{}
		}
	}
}

func isHex(c byte) bool {
	return c-'0' < 10 || (c|0x20)-'a' < 6
}

func isDigit(c byte) bool { return c-'0' < 10 }

// number reads a number whose first byte is next.
func (s *scanner) number() {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i]-'1' < 9:
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		s.fail()
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i == len(b) || !isDigit(b[i]) {
			s.fail()
			return
		}
		for ; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == len(b) || !isDigit(b[i]) {
			s.fail()
			return
		}
		for ; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	s.i = i
}

// literal reads true, false or null.
func (s *scanner) literal() {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return
		}
	}
	s.fail()
}

// skip steps over one value of any kind.
func (s *scanner) skip() {
	switch c := s.peek(); {
	case c == '{' || c == '[':
		s.skipNested()
	case c == '"':
		s.str()
	case c == 't' || c == 'f' || c == 'n':
		s.literal()
	case c == '-' || isDigit(c):
		s.number()
	default:
		s.fail()
	}
}

// skipNested steps over an object or an array. Nesting is tracked in a
// bit stack on the goroutine's stack (one bit per level, 1 for an
// object), so a deep body costs no heap and no recursion.
func (s *scanner) skipNested() {
	var kinds [maxDepth/64 + 1]uint64
	d := 0 // levels opened by this call
	for {
		// A value.
		switch c := s.peek(); {
		case c == '{' || c == '[':
			s.i++
			if s.depth+d+1 > maxDepth {
				s.fail()
				return
			}
			bit := uint64(1) << (d % 64)
			if c == '{' {
				kinds[d/64] |= bit
			} else {
				kinds[d/64] &^= bit
			}
			d++
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			if s.peek() == closer {
				s.i++
				d--
				break
			}
			if c == '{' {
				s.key()
			}
			continue
		case c == '"':
			s.str()
		case c == 't' || c == 'f' || c == 'n':
			s.literal()
		case c == '-' || isDigit(c):
			s.number()
		default:
			s.fail()
			return
		}
		// After a value: close what ends here, then find the next one.
		for {
			if s.bad || d == 0 {
				return
			}
			obj := kinds[(d-1)/64]&(1<<((d-1)%64)) != 0
			c := s.peek()
			if c == ',' {
				s.i++
				if obj {
					s.key()
				}
				break
			}
			if obj && c == '}' || !obj && c == ']' {
				s.i++
				d--
				continue
			}
			s.fail()
			return
		}
	}
}

// value steps over one value and returns its bytes.
func (s *scanner) value() []byte {
	s.peek()
	start := s.i
	s.skip()
	return s.b[start:s.i]
}

// unquote returns the text of a string with escapes, decoded as
// encoding/json decodes it: a \u escape that is half of a surrogate pair
// with no other half becomes U+FFFD.
func unquote(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(raw[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				// The scanner has checked that a \u has 4 hex digits.
				if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2 = hex4(raw[i+3:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, raw[i])
		}
		i++
	}
	return out
}

// hex4 decodes 4 hex digits the scanner has already checked.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		default:
			c = (c | 0x20) - 'a' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
