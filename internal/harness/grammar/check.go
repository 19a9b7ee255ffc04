package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// Check frames stream and holds its events to d's grammar. It returns
// nil, or the first *Violation.
func Check(d Dialect, stream []byte) error {
	evs, err := Frame(stream)
	if err != nil {
		v := err.(*Violation)
		v.Dialect = d
		return v
	}
	return CheckEvents(d, evs)
}

// CheckEvents holds events already framed to d's grammar.
func CheckEvents(d Dialect, evs []Event) error {
	var c checker
	switch d {
	case OpenAIChat:
		c = &openAIChat{}
	case Anthropic:
		c = &anthropic{open: -1}
	case Responses:
		c = &responses{}
	default:
		return fmt.Errorf("grammar: unknown dialect %v", d)
	}
	for _, ev := range evs {
		if v := c.event(ev); v != nil {
			v.Dialect, v.Index = d, ev.Index
			if v.Type == "" {
				v.Type = ev.Name
			}
			return v
		}
	}
	if v := c.end(); v != nil {
		v.Dialect, v.Index = d, len(evs)
		v.Type = "end of stream"
		return v
	}
	return nil
}

// A checker reads one stream's events in order.
type checker interface {
	event(Event) *Violation
	end() *Violation
}

func violate(rule Rule, typ, format string, args ...any) *Violation {
	return &Violation{Rule: rule, Type: typ, Detail: fmt.Sprintf(format, args...)}
}

// object is a JSON object read with numbers kept as written.
type object map[string]any

// parseObject reads data as one JSON object, and nothing after it.
func parseObject(data string) (object, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if rest := bytes.TrimLeft([]byte(data[dec.InputOffset():]), " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("not one JSON value: %q follows it", clip(string(rest)))
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a JSON %s, not an object", kind(v))
	}
	return o, nil
}

// kind names a JSON value's kind, for messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// has reports whether o has key k, null or not.
func (o object) has(k string) bool { _, ok := o[k]; return ok }

// str is o[k] as a string; ok is false when it is missing or not one.
func (o object) str(k string) (string, bool) {
	s, ok := o[k].(string)
	return s, ok
}

// obj is o[k] as an object.
func (o object) obj(k string) (object, bool) {
	m, ok := o[k].(map[string]any)
	return m, ok
}

// arr is o[k] as an array.
func (o object) arr(k string) ([]any, bool) {
	a, ok := o[k].([]any)
	return a, ok
}

// integer is o[k] as an integer: a JSON number with no fraction.
func (o object) integer(k string) (int64, bool) {
	n, ok := o[k].(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// describe is what o[k] is, for messages: missing, or its kind.
func (o object) describe(k string) string {
	v, ok := o[k]
	if !ok {
		return "missing"
	}
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return "a " + kind(v)
}

// typed reads an Anthropic or Responses event: its data is an object
// with a string type, named by its event: field. unnamed says what a
// reader does with an event that has none.
func typed(ev Event, known func(string) bool, dialect, unnamed string) (object, string, *Violation) {
	o, err := parseObject(ev.Data)
	if err != nil {
		return nil, "", violate(RuleJSON, "", "data %s", err)
	}
	typ, ok := o.str("type")
	if !ok {
		return nil, "", violate(RuleShape, "", "data has no string type (type is %s)", o.describe("type"))
	}
	switch {
	case !ev.Named:
		return nil, "", violate(RuleEventName, typ, "no event: field; %s names every event%s", dialect, unnamed)
	case ev.Name != typ:
		return nil, "", violate(RuleEventName, typ, "event: %q, but the data's type is %q", ev.Name, typ)
	case !known(typ):
		return nil, "", violate(RuleKnownType, typ, "%q is not an event type of %s's stream", typ, dialect)
	}
	return o, typ, nil
}

// clip shortens s for a message.
func clip(s string) string {
	const most = 40
	if len(s) > most {
		return s[:most] + "…"
	}
	return s
}
