package bedrock

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// obj is one JSON object of a hub request, read key by key: what no one
// took is refused (or dropped) at the end, so an unknown parameter is
// never lost in silence.
//
// Its fields are spans of the body found by one walk over the object's
// bytes, not a map and a copy per object: a map for every content
// block cost about seventy times a body of one-character blocks. A key
// repeated takes its last value, as encoding/json's map would.
type obj struct {
	path   string
	fields []objField
}

type objField struct {
	key  string
	val  json.RawMessage
	used bool
}

func invalid(param, path, reason string) error {
	return &translate.Error{Kind: translate.ErrInvalid, Param: param, Path: path, Reason: reason}
}

// at is the path of key inside o.
func (o *obj) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// parseObj reads raw, at path, as a JSON object. The body (path "") is
// checked whole once; a value inside it is valid JSON already.
func parseObj(raw json.RawMessage, path string) (*obj, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || path == "" && !json.Valid(raw) {
		return nil, invalid(translate.ParamOf(path), path, "must be a JSON object")
	}
	o := &obj{path: path}
	for i := protocol.SkipSpace(raw, 1); i < len(raw) && raw[i] != '}'; {
		end := protocol.StringEnd(raw, i)
		key := raw[i : end+1]
		i = protocol.SkipSpace(raw, protocol.SkipSpace(raw, end+1)+1) // past the colon
		vend := protocol.SkipValue(raw, i)
		o.fields = append(o.fields, objField{key: keyOf(key), val: raw[i:vend]})
		if i = protocol.SkipSpace(raw, vend); i < len(raw) && raw[i] == ',' {
			i = protocol.SkipSpace(raw, i+1)
		}
	}
	return o, nil
}

// keyOf is a quoted JSON key's value.
func keyOf(q []byte) string {
	if s := q[1 : len(q)-1]; protocol.PlainString(s) {
		return string(s)
	}
	var k string
	_ = json.Unmarshal(q, &k) // valid JSON: a string
	return k
}

// take returns key's value, nil when it is absent or null.
func (o *obj) take(key string) json.RawMessage {
	var v json.RawMessage
	for i := range o.fields {
		if f := &o.fields[i]; f.key == key {
			f.used, v = true, f.val
		}
	}
	if isNull(v) {
		return nil
	}
	return v
}

// last lists the index of each key's last field: the one whose value
// is the key's.
func (o *obj) last() map[string]int {
	m := make(map[string]int, len(o.fields))
	for i, f := range o.fields {
		m[f.key] = i
	}
	return m
}

// str reads key as a string, "" when absent.
func (o *obj) str(key string) (string, error) {
	v := o.take(key)
	if v == nil {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", invalid(translate.ParamOf(o.at(key)), o.at(key), "must be a string")
	}
	return s, nil
}

// num reads key as a number, nil when absent.
func (o *obj) num(key string) (*float64, error) {
	v := o.take(key)
	if v == nil {
		return nil, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return nil, invalid(translate.ParamOf(o.at(key)), o.at(key), "must be a number")
	}
	return &f, nil
}

// integer reads key as a whole number, nil when absent.
func (o *obj) integer(key string) (*int64, error) {
	v := o.take(key)
	if v == nil {
		return nil, nil
	}
	var n int64
	if err := json.Unmarshal(v, &n); err != nil {
		return nil, invalid(translate.ParamOf(o.at(key)), o.at(key), "must be a whole number")
	}
	return &n, nil
}

// boolean reads key as a boolean, false when absent.
func (o *obj) boolean(key string) (bool, error) {
	v := o.take(key)
	if v == nil {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, invalid(translate.ParamOf(o.at(key)), o.at(key), "must be true or false")
	}
	return b, nil
}

// array reads key as a JSON array, nil when absent.
func (o *obj) array(key string) ([]json.RawMessage, error) {
	v := o.take(key)
	if v == nil {
		return nil, nil
	}
	var a []json.RawMessage
	if err := json.Unmarshal(v, &a); err != nil {
		return nil, invalid(translate.ParamOf(o.at(key)), o.at(key), "must be an array")
	}
	return a, nil
}

// object reads key as a JSON object, nil when absent.
func (o *obj) object(key string) (*obj, error) {
	v := o.take(key)
	if v == nil {
		return nil, nil
	}
	return parseObj(v, o.at(key))
}

// rest refuses (or drops) every key no one took, in sorted order:
// cache_control is shape-neutral (Converse has no cache breakpoints in
// Sluice's mapping), everything else is not.
func (o *obj) rest(b *translate.Bender) error {
	var keys []string
	last := o.last()
	for i, f := range o.fields {
		// take marks every field of its key: the last stands for all.
		if last[f.key] == i && !f.used && !isNull(f.val) {
			keys = append(keys, f.key)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := o.at(k)
		neutral, why := false, "has no equivalent in Bedrock's Converse API"
		if k == "cache_control" {
			neutral, why = true, "Converse's prompt caching is not mapped; the prompt is sent uncached"
		}
		if err := b.Refuse(translate.ParamOf(p), p, why, neutral); err != nil {
			return err
		}
	}
	return nil
}
