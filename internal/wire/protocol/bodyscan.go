package protocol

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// scanBody is ParseBody's fast path: one validating pass (JSONScanner,
// which allocates nothing) and one walk over the top level, where
// encoding/json's tokenizer spends an allocation or more on every key and
// value (each value's end is even found by making an error). It takes
// only the common shape: plain keys and a plain model string (no escapes,
// valid UTF-8), a boolean stream and whole-number token limits. Anything
// else, valid or not, returns ok false, and decodeBody, the reference,
// decides and words the refusal; so a body scanBody takes is read
// exactly as decodeBody reads it (FuzzParseBody checks that).
func scanBody(raw []byte) (b *Body, ok bool) {
	var v JSONScanner
	if !v.Write(raw) || !v.Done() {
		return nil, false
	}
	i := SkipSpace(raw, 0)
	if raw[i] != '{' {
		return nil, false
	}
	b = &Body{raw: raw, model: span{-1, -1}, maxTokens: span{-1, -1}, messages: span{-1, -1}, tools: span{-1, -1}, responseFormat: span{-1, -1}, outputConfig: span{-1, -1}}
	if !eachField(raw, i, routedFieldBytes, b.take) || !b.model.ok() {
		return nil, false
	}
	return b, true
}

// eachField calls f with each key of the object that starts at raw[i]
// (valid JSON) and its value's span. It stops, false, when f does or when
// a key is not plain, repeats, or is one of names in another case: a key
// encoding/json might read otherwise than its bytes say.
func eachField(raw []byte, i int, names [][]byte, f func(key []byte, at span) bool) bool {
	var seenBuf [16][]byte
	seen := seenBuf[:0]
	// After '{' come either '}' or "key": value pairs separated by commas.
	for i = SkipSpace(raw, i+1); raw[i] != '}'; {
		end := StringEnd(raw, i)
		key := raw[i+1 : end]
		if !plainKey(seen, key, names) {
			return false
		}
		seen = append(seen, key)
		i = SkipSpace(raw, SkipSpace(raw, end+1)+1) // past the colon
		vend := SkipValue(raw, i)
		if !f(key, span{i, vend}) {
			return false
		}
		if i = SkipSpace(raw, vend); raw[i] == ',' {
			i = SkipSpace(raw, i+1)
		}
	}
	return true
}

// take records a top-level field the gateway reads, at its value's span;
// false when its value is not in the shape scanBody decides alone.
func (b *Body) take(key []byte, at span) bool {
	v := b.raw[at.start:at.end]
	switch string(key) {
	case "model":
		if v[0] != '"' || len(v) == 2 || !PlainString(v[1:len(v)-1]) {
			return false
		}
		b.Model, b.model = string(v[1:len(v)-1]), at
	case "stream":
		switch string(v) {
		case "true":
			b.Stream = true
		case "false":
			b.Stream = false
		default:
			return false
		}
	case "max_tokens", "max_completion_tokens", "max_output_tokens":
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 0 || b.maxTokens.ok() {
			return false
		}
		b.MaxTokens, b.maxTokens = n, at
	case "stream_options":
		b.StreamOptions = true
	case "messages":
		b.messages = at
	case "tools":
		b.tools = at
	case "response_format":
		b.responseFormat = at
	case "output_config":
		b.outputConfig = at
	}
	return true
}

// routedFieldBytes is RoutedFields as byte slices, for comparing raw keys
// without converting them.
var routedFieldBytes = byteSlices(RoutedFields)

func byteSlices(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// plainKey reports whether key is unescaped valid UTF-8 (so its raw bytes
// are its value), not among seen, and not one of names in another case
// (for a request body, RoutedFields: a key checkKey would pass).
func plainKey(seen [][]byte, key []byte, names [][]byte) bool {
	if !PlainString(key) {
		return false
	}
	for _, s := range seen {
		if bytes.Equal(s, key) {
			return false
		}
	}
	for _, f := range names {
		if bytes.EqualFold(key, f) && !bytes.Equal(key, f) {
			return false
		}
	}
	return true
}

// PlainString reports whether a JSON string's contents decode to
// themselves: no escapes, and valid UTF-8 (encoding/json replaces invalid
// bytes).
func PlainString(s []byte) bool {
	return bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s)
}

// SkipSpace is the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

// StringEnd is the index of the quote that closes the string whose
// opening quote is at i, in valid JSON (len(raw) if none does): the
// first quote after it with an even run of backslashes before it,
// found at memchr's speed on a long string.
func StringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		k := bytes.IndexByte(raw[j:], '"')
		if k < 0 {
			break
		}
		j += k
		n := 0
		for b := j - 1; b > i && raw[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return j
		}
	}
	return len(raw)
}

// SkipValue is the end (exclusive) of the value that starts at i, in
// valid JSON; in JSON cut short, at most len(raw).
func SkipValue(raw []byte, i int) int {
	depth := 0
	for ; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			i = StringEnd(raw, i)
		case '{', '[':
			depth++
			continue
		case '}', ']':
			depth--
		default:
			if depth == 0 { // a number or a literal: it runs to a delimiter
				for i < len(raw) && !isSpace(raw[i]) && raw[i] != ',' && raw[i] != '}' && raw[i] != ']' {
					i++
				}
				return i
			}
			continue
		}
		if depth == 0 {
			return min(i+1, len(raw))
		}
	}
	return min(i, len(raw)) // cut short: never past raw's end
}
