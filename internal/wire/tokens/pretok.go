package tokens

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer splits a text into the pieces a BPE then encodes one
// at a time, exactly as the tokenizer library's regular expressions do
// for cl100k_base and o200k_base:
//
//	cl100k_base: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	             ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	o200k_base:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|...)?|
//	             [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|...)?|
//	             \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// It is hand-written so that it runs in time linear in the text: the
// library's matcher rescans a whole run of whitespace for every piece
// it takes out of it, which is quadratic on a long run of " \n".
//
// "Exactly as the library does" includes three points where the
// library's compiled matcher differs from the patterns as tiktoken reads
// them; the tests hold this file to the library, piece for piece:
//
//   - \s*[\r\n]+ ends after the first run of line breaks in a stretch of
//     whitespace, not the last: "x \n \ny" splits " \n", " \n".
//   - U+007F (DEL) is in neither [^\r\n\p{L}\p{N}] nor [^\s\p{L}\p{N}],
//     so no alternative matches it: it is skipped, belongs to no piece and
//     costs no token.
//   - The case-insensitive contractions match 's as 's, 'S and 'ſ (U+017F,
//     which folds to s); the other letters only in ASCII.
//
// The classes are those of Go's unicode tables, as the library's are:
// \s is unicode.IsSpace (so it includes U+0085, U+00A0, U+2028, U+2029,
// U+1680, U+2000–U+200A, U+202F, U+205F and U+3000, but not U+200B or
// U+FEFF), \p{L} is unicode.L, \p{N} unicode.N, \p{M} unicode.M.
//
// The text must be valid UTF-8: the library matches on the text's runes,
// each invalid byte becoming U+FFFD, and its pieces are those runes
// encoded again, so validUTF8 makes the same replacement first.

// Rune classes, as bits.
const (
	cL     uint16 = 1 << iota // \p{L}
	cN                        // \p{N}
	cS                        // \s
	cNL                       // \r or \n
	cPre                      // [^\r\n\p{L}\p{N}], the optional first rune of a word
	cPunct                    // [^\s\p{L}\p{N}]
	cUpper                    // o200k_base's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower                    // o200k_base's [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cApos                     // '
	cSlash                    // / (o200k_base's [\r\n/]* after punctuation)
)

// classify returns r's classes.
func classify(r rune) uint16 {
	var c uint16
	letter, number := unicode.IsLetter(r), unicode.IsNumber(r)
	if letter {
		c |= cL
	}
	if number {
		c |= cN
	}
	if unicode.IsSpace(r) {
		c |= cS
	}
	if r == '\r' || r == '\n' {
		c |= cNL
	}
	// The library's compiled sets leave DEL out of both negated classes.
	if r != 0x7f && !letter && !number {
		if r != '\r' && r != '\n' {
			c |= cPre
		}
		if c&cS == 0 {
			c |= cPunct
		}
	}
	mark := unicode.IsMark(r)
	if unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r) || unicode.Is(unicode.Lm, r) || unicode.Is(unicode.Lo, r) || mark {
		c |= cUpper
	}
	if unicode.Is(unicode.Ll, r) || unicode.Is(unicode.Lm, r) || unicode.Is(unicode.Lo, r) || mark {
		c |= cLower
	}
	switch r {
	case '\'':
		c |= cApos
	case '/':
		c |= cSlash
	}
	return c
}

// asciiClasses and bmpClasses hold classify's answers for the runes
// below 0x80 and below 0x10000; the rest are classified when met.
var (
	asciiClasses [utf8.RuneSelf]uint16
	bmpClasses   = sync.OnceValue(func() *[0x10000]uint16 {
		var t [0x10000]uint16
		for r := range rune(len(t)) {
			t[r] = classify(r)
		}
		return &t
	})
)

func init() {
	for r := range rune(utf8.RuneSelf) {
		asciiClasses[r] = classify(r)
	}
}

// at returns the classes and the size of the rune at s[i], i < len(s).
func at(s string, i int) (uint16, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClasses[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r < 0x10000 {
		return bmpClasses()[r], n
	}
	return classify(r), n
}

// run returns the end of the run of runes from i that have a class in
// want.
func run(s string, i int, want uint16) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiClasses[c]&want == 0 {
				break
			}
			i++
			continue
		}
		c, n := at(s, i)
		if c&want == 0 {
			break
		}
		i += n
	}
	return i
}

// contraction returns the end of a contraction ('s, 't, 're, 've, 'm,
// 'll or 'd, without regard to case) at s[i], or i if there is none.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return i + 3
		}
	}
	if len(s)-i >= 3 && s[i+1:i+3] == "ſ" {
		return i + 3
	}
	return i
}

// nextPiece returns the next piece of s at or after i as s[start:end];
// start == end == len(s) when there is none. o200k selects o200k_base's
// rules, otherwise cl100k_base's.
func nextPiece(s string, i int, o200k bool) (start, end int) {
	for i < len(s) {
		var e int
		if o200k {
			e = pieceO200k(s, i)
		} else {
			e = pieceCl100k(s, i)
		}
		if e > i {
			return i, e
		}
		_, n := at(s, i) // a rune no alternative matches (DEL)
		i += n
	}
	return len(s), len(s)
}

// pieceCl100k returns the end of the piece cl100k_base's pattern matches
// at s[i], or i if none does.
func pieceCl100k(s string, i int) int {
	c0, n0 := at(s, i)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c0&cApos != 0 {
		if e := contraction(s, i); e > i {
			return e
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0&cL != 0 {
		return run(s, i, cL)
	}
	if c0&cPre != 0 && i+n0 < len(s) {
		if c1, _ := at(s, i+n0); c1&cL != 0 {
			return run(s, i+n0, cL)
		}
	}
	// \p{N}{1,3}
	if c0&cN != 0 {
		return digits(s, i)
	}
	// ?[^\s\p{L}\p{N}]+[\r\n]*
	if e := punct(s, i, cNL); e > i {
		return e
	}
	return space(s, i, c0)
}

// pieceO200k returns the end of the piece o200k_base's pattern matches
// at s[i], or i if none does.
func pieceO200k(s string, i int) int {
	c0, n0 := at(s, i)
	if c0&(cPre|cUpper|cLower) != 0 {
		if e := wordO200k(s, i, c0, n0); e > i {
			return e
		}
	}
	// \p{N}{1,3}
	if c0&cN != 0 {
		return digits(s, i)
	}
	// ?[^\s\p{L}\p{N}]+[\r\n/]*
	if e := punct(s, i, cNL|cSlash); e > i {
		return e
	}
	return space(s, i, c0)
}

// wordO200k matches o200k_base's two word alternatives at s[i], whose
// rune has classes c0 and size n0, and returns the end, or i. Each has
// an optional leading [^\r\n\p{L}\p{N}], tried taken first and then
// not; the first alternative is tried both ways before the second.
//
// The first, P?U*W+C? (U and W the upper- and lower-case classes, which
// share \p{Lm}, \p{Lo} and \p{M}): the U* loop gives back runes one at a
// time until a W follows it, so W+ starts at the rune after the U run if
// that is a W, or else at the last W inside the U run; it then runs as
// far as W goes.
func wordO200k(s string, i int, c0 uint16, n0 int) int {
	var starts [2]int // where the word proper starts: after P, at i
	k := 0
	if c0&cPre != 0 {
		starts[k] = i + n0
		k++
	}
	if c0&(cUpper|cLower) != 0 {
		starts[k] = i
		k++
	}
	for _, q := range starts[:k] {
		// U* then W+.
		lastW := -1 // where the last W inside the U run starts
		j := q
		for j < len(s) {
			c, n := at(s, j)
			if c&cUpper == 0 {
				if c&cLower != 0 {
					lastW = j
				}
				break
			}
			if c&cLower != 0 {
				lastW = j
			}
			j += n
		}
		if lastW >= 0 {
			return contraction(s, run(s, lastW, cLower))
		}
	}
	for _, q := range starts[:k] {
		// U+ then W*.
		if j := run(s, q, cUpper); j > q {
			return contraction(s, run(s, j, cLower))
		}
	}
	return i
}

// digits matches \p{N}{1,3} at s[i], which is a number.
func digits(s string, i int) int {
	for range 3 {
		if i >= len(s) {
			break
		}
		c, n := at(s, i)
		if c&cN == 0 {
			break
		}
		i += n
	}
	return i
}

// punct matches " ?[^\s\p{L}\p{N}]+" and then a run of the classes in
// tail, at s[i], and returns the end, or i.
func punct(s string, i int, tail uint16) int {
	j := i
	if s[j] == ' ' {
		j++
	}
	e := run(s, j, cPunct)
	if e == j {
		return i
	}
	for e < len(s) && s[e] < utf8.RuneSelf && asciiClasses[s[e]]&tail != 0 {
		e++
	}
	return e
}

// space matches the three whitespace alternatives at s[i], whose rune
// has classes c0, and returns the end, or i.
func space(s string, i int, c0 uint16) int {
	if c0&cS == 0 {
		return i
	}
	// \s*[\r\n]+, as the library's matcher runs it: to the end of the
	// first run of line breaks in the stretch of whitespace.
	last := i // where the stretch's last rune starts
	j := i
	for j < len(s) {
		c, n := at(s, j)
		if c&cS == 0 {
			break
		}
		if c&cNL != 0 {
			for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
				j++
			}
			return j
		}
		last = j
		j += n
	}
	// \s+(?!\S): all of the stretch at the end of the text, else all but
	// its last rune; \s+: a stretch of one rune before a non-space.
	if j == len(s) || last == i {
		return j
	}
	return last
}

// validUTF8 returns s with each byte that is not part of a valid UTF-8
// encoding replaced by U+FFFD, as converting s to runes does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+len(s)/2)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}
