package answer

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Errors. Each says why an answer was not turned; the cache reads any
// of them as "do not store".
var (
	// ErrIncomplete: a stream without its terminator, or a choice
	// without its finish reason.
	ErrIncomplete = errors.New("answer: incomplete")
	// ErrShape: the answer has a part this package cannot read or write
	// back faithfully.
	ErrShape = errors.New("answer: a shape this package cannot carry")
	// ErrFailed: the stream carried its provider's error.
	ErrFailed = errors.New("answer: the stream failed")
)

func shape(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrShape, fmt.Sprintf(format, args...))
}

// field is one member of a JSON object, its value as written.
type field struct {
	name  string
	value jsontext.Value
}

// object is a JSON object's members in their order. Reading one
// refuses a repeated name and a string that is not UTF-8 (jsontext's
// defaults): a reader that took the first of two names would read
// another answer than one that took the last.
type object []field

func readObject(v []byte) (object, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if dec.PeekKind() != '{' {
		return nil, shape("not an object")
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, shape("%v", err)
	}
	var o object
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, shape("%v", err)
		}
		name := tok.String() // before the next read voids it
		val, err := dec.ReadValue()
		if err != nil {
			return nil, shape("%v", err)
		}
		o = append(o, field{name: name, value: val.Clone()})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, shape("%v", err)
	}
	if _, err := dec.ReadToken(); err == nil {
		return nil, shape("more than one value")
	}
	return o, nil
}

func (o object) get(name string) jsontext.Value {
	for _, f := range o {
		if f.name == name {
			return f.value
		}
	}
	return nil
}

// only reports the first member whose name is not in names ("" when
// every one is).
func (o object) only(names ...string) string {
next:
	for _, f := range o {
		for _, n := range names {
			if f.name == n {
				continue next
			}
		}
		return f.name
	}
	return ""
}

// set replaces name's value, or appends it.
func (o object) set(name string, v []byte) object {
	for i := range o {
		if o[i].name == name {
			o[i].value = v
			return o
		}
	}
	return append(o, field{name: name, value: v})
}

func (o object) appendTo(b []byte) []byte {
	b = append(b, '{')
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = jsontext.AppendQuote(b, f.name)
		b = append(b, ':')
		b = append(b, f.value...)
	}
	return append(b, '}')
}

func (o object) bytes() []byte { return o.appendTo(nil) }

// isNull reports whether v is absent or null.
func isNull(v jsontext.Value) bool { return len(v) == 0 || v.Kind() == 'n' }

// str reads a JSON string; ok false when v is not one.
func str(v jsontext.Value) (string, bool) {
	if len(v) == 0 || v.Kind() != '"' {
		return "", false
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return string(s), err == nil
}

// integer reads a whole number, ok false when v is not one.
func integer(v jsontext.Value) (int64, bool) {
	if len(v) == 0 || v.Kind() != '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// elements reads a JSON array's elements.
func elements(v jsontext.Value) ([]jsontext.Value, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if dec.PeekKind() != '[' {
		return nil, shape("not an array")
	}
	dec.ReadToken()
	var out []jsontext.Value
	for dec.PeekKind() != ']' {
		val, err := dec.ReadValue()
		if err != nil {
			return nil, shape("%v", err)
		}
		out = append(out, val.Clone())
	}
	_, err := dec.ReadToken()
	return out, err
}

func quote(s string) []byte {
	b, _ := jsontext.AppendQuote(nil, s)
	return b
}

func quoteBytes(s []byte) []byte {
	b, _ := jsontext.AppendQuote(nil, s)
	return b
}

func array(vals []jsontext.Value) []byte {
	b := []byte{'['}
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

var null = []byte("null")
