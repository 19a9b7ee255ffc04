package bedrock

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// obj is one JSON object of a hub request, read key by key: what no one
// took is refused (or dropped) at the end, so an unknown parameter is
// never lost in silence.
type obj struct {
	path string
	m    map[string]json.RawMessage
	used map[string]bool
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

// parseObj reads raw, at path, as a JSON object.
func parseObj(raw json.RawMessage, path string) (*obj, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, invalid(translate.ParamOf(path), path, "must be a JSON object")
	}
	return &obj{path: path, m: m, used: map[string]bool{}}, nil
}

// take returns key's value, nil when it is absent or null.
func (o *obj) take(key string) json.RawMessage {
	o.used[key] = true
	v := o.m[key]
	if isNull(v) {
		return nil
	}
	return v
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
	for k, v := range o.m {
		if !o.used[k] && !isNull(v) {
			keys = append(keys, k)
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
