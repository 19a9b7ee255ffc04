package gateway

import (
	"bytes"
	"cmp"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// A whole answer too large to hold (relayLarge) has its usage read by the
// decoder that checks it, by path, as its tokens pass: the top-level
// usage's counts, the first choice's finish_reason and the top-level
// stop_reason, the fields protocol.AnswerUsage reads of an answer held
// whole. A count anywhere else (in a tool's input, in the text) is never
// read, however the answer is spaced, escaped or ordered.
//
// Keys match as encoding/json matches them, AnswerUsage's reference:
// without regard to case, the last of a repeated key winning, and a
// field of a type the answer's shape does not allow makes its usage
// none. Which count wins and which are in range is AnswerUsage's to say:
// the fields read here go to it as a small answer of their own
// (answerPath.result), so a large answer and a small one are judged by
// the same rules.
type answerPath struct {
	// completion and output are usage.completion_tokens and
	// usage.output_tokens as written (a JSON number), empty when absent
	// or null.
	completion, output []byte
	// inputs are usage's prompt_tokens, input_tokens,
	// cache_creation_input_tokens and cache_read_input_tokens as
	// written, each when a number.
	inputs [4][]byte
	// cached are usage.prompt_tokens_details.cached_tokens and
	// usage.input_tokens_details.cached_tokens, each when a number.
	cached [2][]byte
	// finishReason is choices[0].finish_reason; stopReason the top-level
	// stop_reason.
	finishReason, stopReason string
	// mistyped: one of those fields, or a value on their path, had a type
	// the decoder would refuse (usage a string, a count of 1.5).
	mistyped bool
	key      []byte // an escaped key, unquoted
}

// pathKey are the keys on the path, as AnswerUsage's decoder names them.
var pathKey = struct {
	usage, choices, stop, finish, completion, output, cached []byte
	details                                                  [2][]byte
	inputs                                                   [4][]byte
}{
	[]byte("usage"), []byte("choices"), []byte("stop_reason"), []byte("finish_reason"),
	[]byte("completion_tokens"), []byte("output_tokens"), []byte("cached_tokens"),
	[2][]byte{[]byte("prompt_tokens_details"), []byte("input_tokens_details")},
	[4][]byte{[]byte("prompt_tokens"), []byte("input_tokens"), []byte("cache_creation_input_tokens"), []byte("cache_read_input_tokens")},
}

// errTrailing: a second value after the answer's one.
var errTrailing = errors.New("gateway: data after the answer's JSON value")

// read reads the one JSON value dec holds to its end, and the fields on
// the path. An error is the decoder's: the answer is malformed, cut
// short, or its source failed.
func (u *answerPath) read(dec *jsontext.Decoder) error {
	var err error
	switch dec.PeekKind() {
	case '{':
		err = u.top(dec)
	case 'n':
		err = dec.SkipValue()
	default:
		err = u.mistype(dec)
	}
	if err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return cmp.Or(err, errTrailing)
	}
	return nil
}

func (u *answerPath) top(dec *jsontext.Decoder) error {
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for {
		key, more, err := u.nextKey(dec)
		if err != nil || !more {
			return err
		}
		switch {
		case bytes.EqualFold(key, pathKey.usage):
			err = u.usage(dec)
		case bytes.EqualFold(key, pathKey.choices):
			err = u.choices(dec)
		case bytes.EqualFold(key, pathKey.stop):
			err = u.reason(dec, &u.stopReason)
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

func (u *answerPath) usage(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '{':
	case 'n':
		return dec.SkipValue() // null leaves what an earlier usage set
	default:
		return u.mistype(dec)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for {
		key, more, err := u.nextKey(dec)
		if err != nil || !more {
			return err
		}
		switch {
		case bytes.EqualFold(key, pathKey.completion):
			err = u.count(dec, &u.completion)
		case bytes.EqualFold(key, pathKey.output):
			err = u.count(dec, &u.output)
		case bytes.EqualFold(key, pathKey.details[0]):
			err = u.details(dec, &u.cached[0])
		case bytes.EqualFold(key, pathKey.details[1]):
			err = u.details(dec, &u.cached[1])
		default:
			err = u.inputCount(dec, key)
		}
		if err != nil {
			return err
		}
	}
}

// inputCount reads one of the input counts when key names it, and skips
// the value otherwise.
func (u *answerPath) inputCount(dec *jsontext.Decoder, key []byte) error {
	for i, name := range pathKey.inputs {
		if bytes.EqualFold(key, name) {
			return u.number(dec, &u.inputs[i])
		}
	}
	return dec.SkipValue()
}

// details reads a *_tokens_details object's cached_tokens. Details of
// another shape are no count, and do not spoil the rest of the usage.
func (u *answerPath) details(dec *jsontext.Decoder, dst *[]byte) error {
	*dst = (*dst)[:0] // a repeated key replaces the details whole
	if dec.PeekKind() != '{' {
		return dec.SkipValue()
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for {
		key, more, err := u.nextKey(dec)
		if err != nil || !more {
			return err
		}
		if bytes.EqualFold(key, pathKey.cached) {
			err = u.number(dec, dst)
		} else {
			err = dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

func (u *answerPath) choices(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '[':
	case 'n':
		return dec.SkipValue()
	default:
		return u.mistype(dec)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	switch dec.PeekKind() {
	case ']':
		u.finishReason = "" // no first choice, so no reason (as the decoder zeroes it)
	case '{':
		if err := u.choice(dec); err != nil {
			return err
		}
	case 'n':
		if err := dec.SkipValue(); err != nil {
			return err
		}
	default:
		if err := u.mistype(dec); err != nil {
			return err
		}
	}
	// The other choices are not read.
	for dec.PeekKind() != ']' {
		if err := dec.SkipValue(); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

func (u *answerPath) choice(dec *jsontext.Decoder) error {
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for {
		key, more, err := u.nextKey(dec)
		if err != nil || !more {
			return err
		}
		if bytes.EqualFold(key, pathKey.finish) {
			err = u.reason(dec, &u.finishReason)
		} else {
			err = dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

// count reads a count the decoder puts in an *int: a number (whole or
// not: AnswerUsage refuses a fraction as the decoder does), or null for
// none.
func (u *answerPath) count(dec *jsontext.Decoder, dst *[]byte) error {
	switch dec.PeekKind() {
	case '0':
		return u.number(dec, dst)
	case 'n':
		*dst = (*dst)[:0]
		return dec.SkipValue()
	}
	return u.mistype(dec)
}

// number reads a count the decoder keeps raw: a number as written, and
// anything else none.
func (u *answerPath) number(dec *jsontext.Decoder, dst *[]byte) error {
	*dst = (*dst)[:0]
	if dec.PeekKind() != '0' {
		return dec.SkipValue()
	}
	v, err := dec.ReadValue()
	*dst = append(*dst, v...)
	return err
}

// reason reads a finish or stop reason: a string, or null for no change.
func (u *answerPath) reason(dec *jsontext.Decoder, dst *string) error {
	switch dec.PeekKind() {
	case '"':
		tok, err := dec.ReadToken()
		*dst = tok.String()
		return err
	case 'n':
		return dec.SkipValue()
	}
	return u.mistype(dec)
}

// mistype skips a value of a type the answer's shape does not allow.
func (u *answerPath) mistype(dec *jsontext.Decoder) error {
	err := dec.SkipValue()
	u.mistyped = err == nil
	return err
}

// nextKey reads the next key of the object being read, unquoted, or its
// end (more false). The key is good until the next read.
func (u *answerPath) nextKey(dec *jsontext.Decoder) (key []byte, more bool, err error) {
	if dec.PeekKind() == '}' {
		_, err := dec.ReadToken()
		return nil, false, err
	}
	v, err := dec.ReadValue()
	if err != nil {
		return nil, false, err
	}
	if raw := v[1 : len(v)-1]; bytes.IndexByte(raw, '\\') < 0 {
		return raw, true, nil
	}
	// The decoder has checked the escapes; invalid UTF-8 becomes U+FFFD,
	// as encoding/json makes it, which no key on the path holds.
	u.key, _ = jsontext.AppendUnquote(u.key[:0], v)
	return u.key, true, nil
}

// result is what AnswerUsage says of an answer holding only the fields
// read: its output count (found), finish reason and input.
func (u *answerPath) result() (n int, found bool, finish string, in protocol.Input) {
	if u.mistyped {
		return 0, false, "", protocol.Input{} // as AnswerUsage has it: well-formed, not this shape
	}
	n, found, _, finish, in = protocol.AnswerUsage(u.compact())
	return n, found, finish, in
}

// compact writes the fields read as a compact answer of their own.
func (u *answerPath) compact() []byte {
	b := append(make([]byte, 0, 320), `{"usage":{`...)
	sep := false
	field := func(name, v []byte) {
		if len(v) == 0 {
			return
		}
		if sep {
			b = append(b, ',')
		}
		b = append(append(append(append(b, '"'), name...), `":`...), v...)
		sep = true
	}
	field(pathKey.completion, u.completion)
	field(pathKey.output, u.output)
	for i, v := range u.inputs {
		field(pathKey.inputs[i], v)
	}
	for i, v := range u.cached {
		if len(v) > 0 {
			field(pathKey.details[i], append(append([]byte(`{"cached_tokens":`), v...), '}'))
		}
	}
	b = append(b, '}')
	if u.finishReason != "" {
		b = append(b, `,"choices":[{"finish_reason":`...)
		b, _ = jsontext.AppendQuote(b, u.finishReason)
		b = append(b, `}]`...)
	}
	if u.stopReason != "" {
		b = append(b, `,"stop_reason":`...)
		b, _ = jsontext.AppendQuote(b, u.stopReason)
	}
	return append(b, '}')
}
