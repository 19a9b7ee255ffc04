package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrMalformed is the sentinel for a request body the gateway cannot use.
var ErrMalformed = errors.New("protocol: malformed request body")

// Body is a request body scanned at its top level only: the gateway reads
// model and stream and leaves every other byte as the client sent it.
type Body struct {
	raw []byte
	// Model is the client-facing model name.
	Model string
	// Stream is the body's "stream" flag.
	Stream bool
	// MaxTokens is the output allowance the body asks for: max_tokens,
	// or max_completion_tokens (OpenAI's newer name); 0 when neither is
	// set.
	MaxTokens int64
	// StreamOptions: the body sets stream_options.
	StreamOptions bool
	// spans of values, quotes included: model, the max-tokens field,
	// messages, tools, response_format, output_config; -1 when absent
	model, maxTokens, messages, tools, responseFormat, outputConfig span
}

// span is where a top-level value lies in the raw body.
type span struct{ start, end int }

func (s span) ok() bool { return s.start >= 0 }

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// ParamError is a malformed body that one top-level parameter is at
// fault for, so an OpenAI-shaped error can name it in "param". It
// wraps ErrMalformed.
type ParamError struct {
	Param string // the field, e.g. "max_tokens"
	Msg   string // what to fix
}

func (e *ParamError) Error() string { return ErrMalformed.Error() + ": " + e.Msg }

func (e *ParamError) Unwrap() error { return ErrMalformed }

func malformedParam(param, format string, args ...any) error {
	return &ParamError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// RoutedFields are the top-level fields the gateway reads to decide where
// and how a request goes. Each must appear once, spelled exactly: Go's
// encoding/json matches keys without regard to case and takes the last of
// duplicates, other parsers take the first, so {"model":"a","Model":"b"}
// could be checked as one model and served as another.
var RoutedFields = []string{"model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens",
	"messages", "system", "prompt", "input", "tools", "tool_choice", "response_format", "output_config"}

// ParseBody scans a JSON object body. It fails with ErrMalformed, and a
// message that says what to fix, if the body is not a JSON object, if a
// top-level key appears twice, if a key differs from one of RoutedFields
// only in case, if model is missing or not a string, or if stream is not
// a boolean.
func ParseBody(raw []byte) (*Body, error) {
	if b, ok := scanBody(raw); ok {
		return b, nil
	}
	return decodeBody(raw)
}

// decodeBody is ParseBody with encoding/json's tokenizer: the reference
// for what a body means, and the path that words every refusal.
// scanBody takes only bodies it agrees on and leaves the rest here.
func decodeBody(raw []byte) (*Body, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, malformed("body is not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, malformed("body must be a JSON object")
	}
	b := &Body{raw: raw, model: span{-1, -1}, maxTokens: span{-1, -1}, messages: span{-1, -1}, tools: span{-1, -1}, responseFormat: span{-1, -1}, outputConfig: span{-1, -1}}
	var seenBuf [16]string // top-level keys: a request has a handful
	seen := seenBuf[:0]
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, malformed("body is not valid JSON: %v", err)
		}
		key, _ := tok.(string)
		if err := checkKey(seen, key); err != nil {
			return nil, err
		}
		seen = append(seen, key)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, malformed("body is not valid JSON: %v", err)
		}
		end := int(dec.InputOffset())
		switch key {
		case "model":
			if err := json.Unmarshal(v, &b.Model); err != nil {
				return nil, malformedParam("model", `"model" must be a string`)
			}
			b.model = span{end - len(v), end}
		case "stream":
			if err := json.Unmarshal(v, &b.Stream); err != nil {
				return nil, malformedParam("stream", `"stream" must be true or false`)
			}
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			// max_output_tokens is the Responses API's.
			var n int64
			if err := json.Unmarshal(v, &n); err != nil || n < 0 {
				return nil, malformedParam(key, "%q must be a whole number of tokens", key)
			}
			if b.maxTokens.ok() {
				return nil, malformedParam(key, `send one of "max_tokens", "max_completion_tokens" and "max_output_tokens", not two`)
			}
			b.MaxTokens, b.maxTokens = n, span{end - len(v), end}
		case "stream_options":
			b.StreamOptions = true
		case "messages":
			b.messages = span{end - len(v), end}
		case "tools":
			b.tools = span{end - len(v), end}
		case "response_format":
			b.responseFormat = span{end - len(v), end}
		case "output_config":
			b.outputConfig = span{end - len(v), end}
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, malformed("body is not valid JSON: %v", err)
	}
	// Checked by hand: a Token call at the end of input allocates an error.
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) != 0 {
		return nil, malformed("unexpected data after the JSON object")
	}
	if !b.model.ok() || b.Model == "" {
		return nil, malformedParam("model", `"model" is required`)
	}
	return b, nil
}

// checkKey refuses a top-level key that repeats one already seen, or that
// differs from a routed field only in case.
func checkKey(seen []string, key string) error {
	for _, s := range seen {
		if s == key {
			return malformedParam(key, "%q appears twice; send each field once", key)
		}
	}
	for _, f := range RoutedFields {
		if key != f && strings.EqualFold(key, f) {
			return malformedParam(key, "%q is not a field; the field is %q (keys are case-sensitive)", key, f)
		}
	}
	return nil
}

// Messages is the raw "messages" array, or nil.
func (b *Body) Messages() []byte {
	if !b.messages.ok() {
		return nil
	}
	return b.raw[b.messages.start:b.messages.end]
}

// Tools is the raw "tools" value, or nil.
func (b *Body) Tools() []byte { return b.value(b.tools) }

// ResponseFormat is the raw "response_format" value, or nil.
func (b *Body) ResponseFormat() []byte { return b.value(b.responseFormat) }

// OutputConfig is the raw "output_config" value (Anthropic's structured
// output), or nil.
func (b *Body) OutputConfig() []byte { return b.value(b.outputConfig) }

// StructuredOutput is what the body asks of its answer's form in dialect
// d: OpenAI's response_format, or Anthropic's output_config; nil for
// none.
func (b *Body) StructuredOutput(d Dialect) []byte {
	if d == Anthropic {
		return b.OutputConfig()
	}
	return b.ResponseFormat()
}

func (b *Body) value(s span) []byte {
	if !s.ok() {
		return nil
	}
	return b.raw[s.start:s.end]
}

// Raw is the body as the client sent it.
func (b *Body) Raw() []byte { return b.raw }

// WithModel returns the body with model's value replaced by name, every
// other byte unchanged.
func (b *Body) WithModel(name string) []byte {
	out, _ := io.ReadAll(b.Reader(Edit{Model: name}))
	return out
}

// Edit is what the gateway changes in a body before it goes upstream.
type Edit struct {
	// Model replaces the model's value (the target's upstream name).
	Model string
	// MaxTokens, when positive, caps the output allowance: a larger
	// max_tokens (or max_completion_tokens, max_output_tokens) is lowered
	// to it, and a body without one gets MaxTokensField.
	MaxTokens int64
	// MaxTokensField is the field a body without one gets: max_tokens
	// when empty (max_output_tokens for the Responses API).
	MaxTokensField string
	// IncludeUsage adds stream_options {"include_usage": true}, so an
	// OpenAI-style stream ends with its token counts.
	IncludeUsage bool
	// Messages, when set, replaces the messages array.
	Messages []byte
}

// Reader returns the body with e applied, every other byte unchanged,
// without copying the body: each upstream call of a request reads the
// one buffer the request holds.
func (b *Body) Reader(e Edit) *BodyReader {
	q, _ := json.Marshal(e.Model) // a string always marshals
	r := &BodyReader{}
	r.parts = r.buf[:0]
	var edits [3]splice
	n := addSplice(&edits, 0, b.model, q)
	var extra []byte // new fields, inserted after the opening brace
	if e.MaxTokens > 0 {
		limit := strconv.AppendInt(nil, e.MaxTokens, 10)
		switch {
		case !b.maxTokens.ok():
			field := e.MaxTokensField
			if field == "" {
				field = "max_tokens"
			}
			extra = append(append(append(append(append(extra, '"'), field...), `":`...), limit...), ',')
		case b.MaxTokens > e.MaxTokens:
			n = addSplice(&edits, n, b.maxTokens, limit)
		}
	}
	if e.IncludeUsage && !b.StreamOptions {
		extra = append(extra, `"stream_options":{"include_usage":true},`...)
	}
	if e.Messages != nil && b.messages.ok() {
		n = addSplice(&edits, n, b.messages, e.Messages)
	}
	// The body is a JSON object, so its first non-space byte is '{'.
	open := bytes.IndexByte(b.raw, '{') + 1
	prev := 0
	if len(extra) > 0 {
		r.parts = append(r.parts, b.raw[:open], extra)
		prev = open
	}
	for _, s := range edits[:n] {
		r.parts = append(r.parts, b.raw[prev:s.at.start], s.with)
		prev = s.at.end
	}
	r.parts = append(r.parts, b.raw[prev:])
	return r
}

type splice struct {
	at   span
	with []byte
}

// addSplice puts a splice among the first n, kept in body order, and
// returns the new count.
func addSplice(edits *[3]splice, n int, at span, with []byte) int {
	i := n
	for i > 0 && edits[i-1].at.start > at.start {
		edits[i] = edits[i-1]
		i--
	}
	edits[i] = splice{at, with}
	return n + 1
}

// BodyReader reads a rewritten body (see Body.Reader).
type BodyReader struct {
	buf   [9][]byte // room for every part an Edit makes
	parts [][]byte
	i     int
}

// Len is the number of bytes left to read.
func (r *BodyReader) Len() int64 {
	n := 0
	for _, p := range r.parts[r.i:] {
		n += len(p)
	}
	return int64(n)
}

func (r *BodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.parts) {
		c := copy(p[n:], r.parts[r.i])
		r.parts[r.i] = r.parts[r.i][c:]
		n += c
		if len(r.parts[r.i]) == 0 {
			r.i++
		}
	}
	if n == 0 && r.i == len(r.parts) {
		return 0, io.EOF
	}
	return n, nil
}
