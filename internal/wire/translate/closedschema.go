package translate

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Anthropic's structured outputs (output_config.format, and strict tool
// use) take only closed objects: every object in the schema must say
// additionalProperties: false. OpenAI's JSON schemas often leave it out
// (only its strict mode asks for it), and there it means "extra
// properties allowed", which a model following the schema rarely uses.
// So a schema crossing to Anthropic is closed: an object that leaves
// additionalProperties out gets false, which keeps every answer the
// client's schema describes by name. One that allows extra properties
// in so many words (true, or a schema for them) asks for what Anthropic
// cannot hold to, and is refused, naming where.

// closeSchema returns schema with every object that leaves out
// additionalProperties closed; schema itself when none does. path
// locates schema in the request, for an error.
func closeSchema(schema json.RawMessage, path string) (json.RawMessage, error) {
	out, changed, err := closeNode(schema, path)
	if err != nil || !changed {
		return schema, err
	}
	return out, nil
}

// schemaKids are the keywords whose value is one subschema, lists of
// subschemas, or a map of name to subschema.
var (
	schemaOne  = []string{"items", "not", "if", "then", "else", "contains", "additionalItems"}
	schemaList = []string{"anyOf", "allOf", "oneOf", "prefixItems"}
	schemaMap  = []string{"properties", "$defs", "definitions", "patternProperties"}
)

// closeNode closes one subschema and those inside it. changed: the
// returned bytes differ from v.
func closeNode(v json.RawMessage, path string) (json.RawMessage, bool, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '{' {
		return v, false, nil // true, false: boolean schemas
	}
	o, err := parseObject(v, path)
	if err != nil {
		return nil, false, err
	}
	changed := false
	vals := make([]json.RawMessage, len(o.fields))
	for i, f := range o.fields {
		vals[i] = f.val
		var kid json.RawMessage
		var c bool
		switch {
		case slices.Contains(schemaOne, f.key):
			kid, c, err = closeNode(f.val, o.at(f.key))
		case slices.Contains(schemaList, f.key):
			kid, c, err = closeEach(f.val, o.at(f.key), false)
		case slices.Contains(schemaMap, f.key):
			kid, c, err = closeEach(f.val, o.at(f.key), true)
		default:
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if c {
			vals[i], changed = kid, true
		}
	}
	add := false
	if isObjectSchema(o) {
		switch ap := bytes.TrimSpace(o.get("additionalProperties")); {
		case ap == nil:
			add = true
		case !bytes.Equal(ap, []byte("false")):
			return nil, false, &Error{Kind: ErrUntranslatable, Param: ParamOf(path), Path: o.at("additionalProperties"),
				Reason: "Anthropic's structured outputs hold answers only to closed objects (additionalProperties: false); this schema allows extra properties"}
		}
	}
	if !changed && !add {
		return v, false, nil
	}
	buf := make([]byte, 0, len(v)+32)
	buf = append(buf, '{')
	for i, f := range o.fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendKey(buf, f.key)
		buf = append(buf, ':')
		buf = append(buf, vals[i]...)
	}
	if add {
		if len(o.fields) > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `"additionalProperties":false`...)
	}
	return append(buf, '}'), true, nil
}

// closeEach closes the subschemas of an array (byName false) or of an
// object's values (byName true).
func closeEach(v json.RawMessage, path string, byName bool) (json.RawMessage, bool, error) {
	v = bytes.TrimSpace(v)
	if byName {
		if len(v) == 0 || v[0] != '{' {
			return v, false, nil
		}
		o, err := parseObject(v, path)
		if err != nil {
			return nil, false, err
		}
		changed := false
		buf := []byte{'{'}
		for i, f := range o.fields {
			kid, c, err := closeNode(f.val, o.at(f.key))
			if err != nil {
				return nil, false, err
			}
			changed = changed || c
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendKey(buf, f.key)
			buf = append(append(buf, ':'), kid...)
		}
		return append(buf, '}'), changed, nil
	}
	items, err := asArray(v, path)
	if err != nil {
		return v, false, nil // not a list: not this keyword's schema form
	}
	changed := false
	buf := []byte{'['}
	for i, it := range items {
		kid, c, err := closeNode(it, index(path, i))
		if err != nil {
			return nil, false, err
		}
		changed = changed || c
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, kid...)
	}
	return append(buf, ']'), changed, nil
}

// isObjectSchema reports whether o describes objects: its type is, or
// includes, "object", or it lists properties.
func isObjectSchema(o *object) bool {
	if o.get("properties") != nil {
		return true
	}
	t := bytes.TrimSpace(o.get("type"))
	if s, ok := decodeString(t); ok {
		return s == "object"
	}
	if len(t) > 0 && t[0] == '[' {
		var types []string
		_ = json.Unmarshal(t, &types)
		return slices.Contains(types, "object")
	}
	return false
}

// appendKey appends key as a JSON string.
func appendKey(dst []byte, key string) []byte {
	q, _ := json.Marshal(key)
	return append(dst, q...)
}
