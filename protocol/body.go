package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// ParseBody scans a JSON object body. It fails with ErrMalformed, and a
// message that says what to fix, if the body is not a JSON object, if
// model is missing or not a string, or if stream is not a boolean.
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
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, malformed("body is not valid JSON: %v", err)
		}
		key, _ := tok.(string)
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

// WithModel returns the body with model's value replaced by name, every
// other byte unchanged.
func (b *Body) WithModel(name string) []byte {
	q, _ := json.Marshal(name) // a string always marshals
	out := make([]byte, 0, len(b.raw)-(b.modelEnd-b.modelStart)+len(q))
	out = append(out, b.raw[:b.modelStart]...)
	out = append(out, q...)
	return append(out, b.raw[b.modelEnd:]...)
}
