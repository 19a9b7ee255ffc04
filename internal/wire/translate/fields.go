package translate

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// object is a JSON object read key by key: a key nobody took is noticed
// (unused) instead of ignored, which typed structs would do, and would do
// without regard to case.
//
// Its fields are spans of the body, found by one walk over the object's
// bytes: no map and no copy per object, so that a body of many small
// messages costs about its own size to read (a map and a copy for every
// message and part cost over fifty times the body). A key repeated takes
// its last value, as encoding/json's map would.
type object struct {
	base   string // its path, or the path of the array it is an element of
	idx    int    // its index in that array; -1: base is its own path
	fields []field
}

// loc is the object's path in the body: made when an error or a
// refusal names it, not for every element of an array read.
func (o *object) loc() string {
	if o.idx < 0 {
		return o.base
	}
	return index(o.base, o.idx)
}

type field struct {
	key  string
	val  json.RawMessage
	used bool
}

// parseObject reads raw as a JSON object located at path ("" for the
// body itself). The body is checked whole once; a value inside it is
// valid JSON already.
func parseObject(raw json.RawMessage, path string) (*object, error) {
	o := &object{}
	if err := o.parse(raw, path); err != nil {
		return nil, err
	}
	return o, nil
}

// parse is parseObject into o, whose fields' room it reuses: a loop over
// many small objects (the messages) allocates for the largest, not each.
func (o *object) parse(raw json.RawMessage, path string) error {
	return o.parseAt(raw, path, -1)
}

// parseAt is parse for element i of the array at base.
func (o *object) parseAt(raw json.RawMessage, base string, idx int) error {
	o.base, o.idx = base, idx
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		path := o.loc()
		return invalid(ParamOf(path), pathOr(path), "must be a JSON object")
	}
	if o.base == "" && o.idx < 0 && !json.Valid(raw) {
		var m map[string]json.RawMessage
		err := json.Unmarshal(raw, &m) // for the error's words
		msg := "is not valid JSON"
		if err != nil {
			msg += ": " + err.Error()
		}
		return invalid("", "body", msg)
	}
	o.fields = o.fields[:0]
	i := protocol.SkipSpace(raw, 1)
	for i < len(raw) && raw[i] != '}' {
		end := protocol.StringEnd(raw, i)
		key := raw[i : end+1]
		i = protocol.SkipSpace(raw, protocol.SkipSpace(raw, end+1)+1) // past the colon
		vend := protocol.SkipValue(raw, i)
		o.fields = append(o.fields, field{key: keyString(key), val: raw[i:vend]})
		if i = protocol.SkipSpace(raw, vend); i < len(raw) && raw[i] == ',' {
			i = protocol.SkipSpace(raw, i+1)
		}
	}
	return nil
}

// keyString is a quoted JSON key's value.
func keyString(q []byte) string {
	s := q[1 : len(q)-1]
	// The keys every message and part has cost no copy.
	switch string(s) {
	case "role":
		return "role"
	case "content":
		return "content"
	case "type":
		return "type"
	case "text":
		return "text"
	}
	if protocol.PlainString(s) {
		return string(s)
	}
	var k string
	_ = json.Unmarshal(q, &k) // valid JSON: a string
	return k
}

func pathOr(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// at is the path of key in o.
func (o *object) at(key string) string {
	path := o.loc()
	if path == "" {
		return key
	}
	return path + "." + key
}

// get takes key: its value, or nil when it is absent or null (JSON null
// means absent throughout both APIs).
func (o *object) get(key string) json.RawMessage {
	var v json.RawMessage
	for i := range o.fields {
		if f := &o.fields[i]; f.key == key {
			f.used, v = true, f.val
		}
	}
	if v == nil || isNull(v) {
		return nil
	}
	return v
}

// unused lists the keys nobody took, sorted, with null values left out:
// a null asks for nothing.
func (o *object) unused() []string {
	// An object of many keys finds the repeated ones in a map: asked
	// field by field, it took time in the square of its keys.
	var last map[string]int
	if len(o.fields) > 16 {
		last = make(map[string]int, len(o.fields))
		for i, f := range o.fields {
			last[f.key] = i
		}
	}
	var keys []string
	for i, f := range o.fields {
		if f.used || isNull(f.val) {
			continue
		}
		if last != nil && last[f.key] != i || last == nil && o.overridden(i) {
			continue
		}
		keys = append(keys, f.key)
	}
	slices.Sort(keys)
	return keys
}

// overridden reports whether field i's key appears again after it (the
// later value is the key's).
func (o *object) overridden(i int) bool {
	for _, f := range o.fields[i+1:] {
		if f.key == o.fields[i].key {
			return true
		}
	}
	return false
}

// refuseUnused refuses every key nobody took (or drops it, as c allows).
func (o *object) refuseUnused(c *conv, target string) error {
	keys := o.unused()
	if len(keys) == 0 {
		return nil
	}
	base, reason := ParamOf(o.loc()), "has no equivalent in "+target+"'s API"
	for _, k := range keys {
		param := ParamOf(k)
		if base != "" {
			param = base + "." + param
		}
		// The path is made only for a refusal, which names it: a body of
		// many unknown keys, dropped, makes none.
		path := ""
		if !c.drops(param, Neutral(param)) {
			path = o.at(k)
		}
		if err := c.refuse(param, path, reason); err != nil {
			return err
		}
	}
	return nil
}

func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// ParamOf strips the indices from a path: messages[2].name →
// messages.name, the parameter's name as Options.Drop and Bender.Refuse
// take it. Every codec names parameters with it.
func ParamOf(path string) string {
	if !strings.Contains(path, "[") {
		return path
	}
	var b strings.Builder
	skip := false
	for _, r := range path {
		switch {
		case r == '[':
			skip = true
		case r == ']':
			skip = false
		case !skip:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func getString(o *object, key string) (string, bool, error) {
	v := o.get(key)
	if v == nil {
		return "", false, nil
	}
	s, ok := decodeString(v)
	if !ok {
		return "", false, invalid(ParamOf(o.at(key)), o.at(key), "must be a string")
	}
	return s, true, nil
}

// getRequired reads a string both APIs require to be non-empty: a tool's
// name, or the id that links a tool call to its result. An empty one is
// refused like a missing one: translated, it would be dropped (its field
// is omitempty) or sent empty, and the other API refuses either.
func getRequired(o *object, key, param string) (string, error) {
	s, ok, err := getString(o, key)
	if err != nil {
		return "", err
	}
	if !ok || s == "" {
		return "", invalid(param, o.at(key), "is required and must not be empty")
	}
	return s, nil
}

func getBool(o *object, key string) (bool, bool, error) {
	v := o.get(key)
	if v == nil {
		return false, false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, false, invalid(ParamOf(o.at(key)), o.at(key), "must be a boolean")
	}
	return b, true, nil
}

// getNumber returns a number both as its value and as written, so it is
// passed on digit for digit.
func getNumber(o *object, key string) (float64, json.RawMessage, error) {
	v := o.get(key)
	if v == nil {
		return 0, nil, nil
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, nil, invalid(ParamOf(o.at(key)), o.at(key), "must be a number")
	}
	f, err := n.Float64()
	if err != nil {
		return 0, nil, invalid(ParamOf(o.at(key)), o.at(key), "must be a number")
	}
	return f, json.RawMessage(n.String()), nil
}

func getInt(o *object, key string) (int64, bool, error) {
	v := o.get(key)
	if v == nil {
		return 0, false, nil
	}
	var n int64
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, false, invalid(ParamOf(o.at(key)), o.at(key), "must be an integer")
	}
	return n, true, nil
}

func getArray(o *object, key string) ([]json.RawMessage, error) {
	v := o.get(key)
	if v == nil {
		return nil, nil
	}
	return asArray(v, o.at(key))
}

func asArray(v json.RawMessage, path string) ([]json.RawMessage, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		return nil, invalid(ParamOf(path), path, "must be an array")
	}
	// The elements are spans of v (valid JSON: see parseObject), not
	// copies.
	a := make([]json.RawMessage, 0, elementCount(v))
	for i := protocol.SkipSpace(v, 1); i < len(v) && v[i] != ']'; {
		end := protocol.SkipValue(v, i)
		a = append(a, v[i:end:end])
		if i = protocol.SkipSpace(v, end); i < len(v) && v[i] == ',' {
			i = protocol.SkipSpace(v, i+1)
		}
	}
	return a, nil
}

// eachElement calls f with each element of the JSON array v, located
// at path, and its index, until f fails: asArray without the slice.
func eachElement(v json.RawMessage, path string, f func(i int, raw json.RawMessage) error) error {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		return invalid(ParamOf(path), path, "must be an array")
	}
	n := 0
	for i := protocol.SkipSpace(v, 1); i < len(v) && v[i] != ']'; n++ {
		end := protocol.SkipValue(v, i)
		if err := f(n, v[i:end:end]); err != nil {
			return err
		}
		if i = protocol.SkipSpace(v, end); i < len(v) && v[i] == ',' {
			i = protocol.SkipSpace(v, i+1)
		}
	}
	return nil
}

// elementCount is how many elements the array v holds.
func elementCount(v []byte) int {
	n := 0
	for i := protocol.SkipSpace(v, 1); i < len(v) && v[i] != ']'; {
		i = protocol.SkipSpace(v, protocol.SkipValue(v, i))
		n++
		if i < len(v) && v[i] == ',' {
			i = protocol.SkipSpace(v, i+1)
		}
	}
	return n
}

// decodeString is the JSON string v's value; ok false when v is not a
// string. A string without escapes is taken as it stands, without
// encoding/json's reflection.
func decodeString(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if !isString(v) {
		return "", false
	}
	if c := v[1 : len(v)-1]; protocol.PlainString(c) {
		return string(c), true
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// isString reports whether v is a JSON string (not an array of parts).
func isString(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '"'
}

// isEmptyObject: {} or { } and the like.
func isEmptyObject(v json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(v, &m) == nil && len(m) == 0
}

// isArray reports whether v is a JSON array.
func isArray(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '['
}

// marshal never fails on this package's own types; a failure would be a
// bug here, not bad input, and is returned rather than panicked on.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
