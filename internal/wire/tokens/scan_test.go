package tokens

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func jsonUnquote(raw string, s *string) error {
	return json.Unmarshal([]byte(`"`+raw+`"`), s)
}

// TestScannerMatchesValid runs the scanner alone over values of every
// kind, valid or nearly so, against encoding/json.Valid.
func TestScannerMatchesValid(t *testing.T) {
	inputs := append([]string{
		`0`, `-0`, `1`, `-1`, `10`, `1.0`, `1.25e10`, `1E+2`, `1e-2`, `123456789012345678901234567890`,
		`""`, `"a"`, `"\"\\\/\b\f\n\r\t\u0000\uFFFF\uabcd"`, `"\u00"`, `"\a"`, "\"\xc3\xa9\"", "\"\xed\xa0\x80\"",
		`[]`, `{}`, `[[]]`, `[{}]`, `{"":{}}`, `{"a":[1,"b",{"c":null}],"d":true}`, `[1,[2,[3,[4]]]]`,
		`[ ]`, `{ }`, ` [ 1 , 2 ] `, `{"a" : 1 , "b" : [ ] }`, `[true,false,null]`, `[truefalse]`, `[1true]`,
		`{"a":1,"a":2}`, `{"a":{"b":{"c":{}}}}`, `[{"a":[{"b":[{}]}]}]`, `{"a":[}`, `[{]`, `{"a"}`, `{1:2}`,
		strings.Repeat("a", 17) + `"`, `"` + strings.Repeat("x", 100) + `\`, `"` + strings.Repeat("x", 9) + "\x1f\"",
	}, notJSON...)
	// Word-at-a-time edges: a special byte at each position of a word.
	for i := range 20 {
		for _, c := range []string{`"`, `\\`, "\x1f", "\x20", "\x7f", "\x80", "\xff", `\"`, `\u0041`} {
			inputs = append(inputs, `"`+strings.Repeat("y", i)+c+strings.Repeat("z", 20-i)+`"`)
		}
	}
	for _, in := range inputs {
		s := scanner{b: []byte(in)}
		s.skip()
		s.peek()
		ok := !s.bad && s.i == len(in) && s.depth == 0
		if ok != json.Valid([]byte(in)) {
			t.Errorf("%q: scanner accepts %v, json.Valid %v", in, ok, !ok)
		}
	}
}

// TestUnquote compares the decoding of escapes with encoding/json's,
// lone and broken surrogate halves included. (Invalid UTF-8 outside
// escapes is kept as it is, where encoding/json writes U+FFFD for each
// bad byte; the tokenizer reads a string as runes, which does the same,
// so the counts agree: FuzzRequest checks it.)
func TestUnquote(t *testing.T) {
	for _, raw := range []string{
		`a\nb`, `\"\\\/\b\f\n\r\t`, `\u0041\u00e9\u4e2d\uFFFF`, `\ud83d\ude00`, `\uD83D\uDE00x`,
		`\ud800`, `\udc00`, `\ud800x`, `\ud800\u0041`, `\ud800\ud800\udc00`, `\udc00\ud800`, `\ud800\\`,
		`\ud800\n`, `x\ud83d`, `\ud83d\ude00\ud83d`, `\u0000`, `\u002F\u005c`, `plain café ☕`, `\uDBFF\uDFFF`,
	} {
		var want string
		if err := jsonUnquote(raw, &want); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got := string(unquote([]byte(raw))); got != want {
			t.Errorf("unquote(%q) = %q; encoding/json gives %q", raw, got, want)
		}
		if !utf8.ValidString(string(unquote([]byte(raw)))) {
			t.Errorf("unquote(%q) is not valid UTF-8", raw)
		}
	}
}
