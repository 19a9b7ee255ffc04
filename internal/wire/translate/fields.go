package translate

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// object is a JSON object read key by key: a key nobody took is noticed
// (unused) instead of ignored, which typed structs would do, and would do
// without regard to case.
type object struct {
	path string
	m    map[string]json.RawMessage
	used map[string]bool
}

// parseObject reads raw as a JSON object located at path ("" for the
// body itself).
func parseObject(raw json.RawMessage, path string) (*object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, invalid(paramOf(path), pathOr(path), "must be a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid(paramOf(path), pathOr(path), "is not valid JSON: "+err.Error())
	}
	return &object{path: path, m: m, used: make(map[string]bool, len(m))}, nil
}

func pathOr(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// at is the path of key in o.
func (o *object) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// get takes key: its value, or nil when it is absent or null (JSON null
// means absent throughout both APIs).
func (o *object) get(key string) json.RawMessage {
	o.used[key] = true
	v, ok := o.m[key]
	if !ok || isNull(v) {
		return nil
	}
	return v
}

// unused lists the keys nobody took, sorted, with null values left out:
// a null asks for nothing.
func (o *object) unused() []string {
	var keys []string
	for k, v := range o.m {
		if !o.used[k] && !isNull(v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// refuseUnused refuses every key nobody took (or drops it, as c allows).
func (o *object) refuseUnused(c *conv, target string) error {
	for _, k := range o.unused() {
		p := o.at(k)
		if err := c.refuse(paramOf(p), p, "has no equivalent in "+target+"'s API"); err != nil {
			return err
		}
	}
	return nil
}

func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// paramOf strips the indices from a path: messages[2].name → messages.name.
func paramOf(path string) string {
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
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, invalid(paramOf(o.at(key)), o.at(key), "must be a string")
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
		return false, false, invalid(paramOf(o.at(key)), o.at(key), "must be a boolean")
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
		return 0, nil, invalid(paramOf(o.at(key)), o.at(key), "must be a number")
	}
	f, err := n.Float64()
	if err != nil {
		return 0, nil, invalid(paramOf(o.at(key)), o.at(key), "must be a number")
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
		return 0, false, invalid(paramOf(o.at(key)), o.at(key), "must be an integer")
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
		return nil, invalid(paramOf(path), path, "must be an array")
	}
	var a []json.RawMessage
	if err := json.Unmarshal(v, &a); err != nil {
		return nil, invalid(paramOf(path), path, "is not valid JSON: "+err.Error())
	}
	return a, nil
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
