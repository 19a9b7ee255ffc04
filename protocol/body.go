package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// span of the model value, quotes included
	modelStart, modelEnd int
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// RoutedFields are the top-level fields the gateway reads to decide where
// and how a request goes. Each must appear once, spelled exactly: Go's
// encoding/json matches keys without regard to case and takes the last of
// duplicates, other parsers take the first, so {"model":"a","Model":"b"}
// could be checked as one model and served as another.
var RoutedFields = []string{"model", "stream", "stream_options", "max_tokens", "max_completion_tokens",
	"messages", "system", "prompt", "input", "tools", "tool_choice", "response_format"}

// ParseBody scans a JSON object body. It fails with ErrMalformed, and a
// message that says what to fix, if the body is not a JSON object, if a
// top-level key appears twice, if a key differs from one of RoutedFields
// only in case, if model is missing or not a string, or if stream is not
// a boolean.
func ParseBody(raw []byte) (*Body, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, malformed("body is not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, malformed("body must be a JSON object")
	}
	b := &Body{raw: raw, modelStart: -1}
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
				return nil, malformed(`"model" must be a string`)
			}
			b.modelStart, b.modelEnd = end-len(v), end
		case "stream":
			if err := json.Unmarshal(v, &b.Stream); err != nil {
				return nil, malformed(`"stream" must be true or false`)
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, malformed("body is not valid JSON: %v", err)
	}
	// Checked by hand: a Token call at the end of input allocates an error.
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) != 0 {
		return nil, malformed("unexpected data after the JSON object")
	}
	if b.modelStart < 0 || b.Model == "" {
		return nil, malformed(`"model" is required`)
	}
	return b, nil
}

// checkKey refuses a top-level key that repeats one already seen, or that
// differs from a routed field only in case.
func checkKey(seen []string, key string) error {
	for _, s := range seen {
		if s == key {
			return malformed("%q appears twice; send each field once", key)
		}
	}
	for _, f := range RoutedFields {
		if key != f && strings.EqualFold(key, f) {
			return malformed("%q is not a field; the field is %q (keys are case-sensitive)", key, f)
		}
	}
	return nil
}

// WithModel returns the body with model's value replaced by name, every
// other byte unchanged.
func (b *Body) WithModel(name string) []byte {
	out, _ := io.ReadAll(b.Reader(name))
	return out
}

// Reader returns the body with model's value replaced by name, every
// other byte unchanged, without copying the body: each upstream call of a
// request reads the one buffer the request holds.
func (b *Body) Reader(name string) *BodyReader {
	q, _ := json.Marshal(name) // a string always marshals
	return &BodyReader{parts: [3][]byte{b.raw[:b.modelStart], q, b.raw[b.modelEnd:]}}
}

// BodyReader reads a rewritten body (see Body.Reader).
type BodyReader struct {
	parts [3][]byte
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
