package mock

import (
	"encoding/json"
	"math"
	"strings"
)

// A fake provider's structured answers and tool calls must pass the
// schema they were asked for, as a real model's do under structured
// outputs, or every client that checks them (the AI SDK's
// generateObject, LangChain's withStructuredOutput, Sluice's own
// validation) fails on the mock and the failure looks like Sluice's.
// valueFor writes the plainest value a schema accepts, for the
// constructs the vendors' structured outputs support: objects (every
// property, nested), arrays (one item, or minItems), enums and const,
// anyOf/oneOf (the first branch that is not null), allOf (merged), local
// $ref, nullable types, string formats and lengths, number bounds.
// Keys come out sorted (a map's JSON), so the same schema gives the same
// bytes every time.

// maxSchemaDepth bounds a recursive schema ($ref to itself): past half
// of it an array has only the items it must, past it an object only its
// required properties.
const maxSchemaDepth = 8

// argsFor is a JSON value that a tool's input schema (or a structured
// output's) accepts.
func argsFor(schema json.RawMessage) string {
	var root any
	if json.Unmarshal(schema, &root) != nil {
		return "{}"
	}
	s, _ := root.(map[string]any)
	v := schemaValue{root: s}.of(s, 0)
	// A schema that says nothing ({}) accepts anything; tool arguments
	// are an object, so that is what it gets.
	if _, ok := v.(map[string]any); !ok && (v == nil || typeOf(s) == "" && len(s) == 0) {
		v = map[string]any{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// schemaValue writes values for the schemas of one document (root, for
// its $refs).
type schemaValue struct{ root map[string]any }

func (g schemaValue) of(s map[string]any, depth int) any {
	if s == nil {
		return map[string]any{}
	}
	if ref, ok := s["$ref"].(string); ok {
		if t := g.resolve(ref); t != nil && depth < maxSchemaDepth {
			return g.of(t, depth+1)
		}
		return nil
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if v, ok := describedChoice(s); ok {
		return v
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if bs, ok := s[k].([]any); ok && len(bs) > 0 {
			for _, b := range bs {
				if bm, ok := b.(map[string]any); ok && bm["type"] != "null" {
					return g.of(bm, depth+1)
				}
			}
			return nil
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		merged := map[string]any{}
		for _, b := range all {
			if v, ok := g.of(asSchema(b), depth+1).(map[string]any); ok {
				for k, x := range v {
					merged[k] = x
				}
			}
		}
		return merged
	}
	switch typeOf(s) {
	case "object":
		return g.object(s, depth)
	case "array":
		return g.array(s, depth)
	case "string":
		return stringFor(s)
	case "integer":
		return math.Round(numberFor(s, true))
	case "number":
		return numberFor(s, false)
	case "boolean":
		return true
	case "null":
		return nil
	}
	return "mock"
}

// describedChoice reads a const or an enum that a client moved into the
// schema's description. The official Anthropic SDKs' strict-schema helper
// (transformJSONSchema, which LangChain's ChatAnthropic uses for its
// structured outputs too) keeps only the keywords it trusts and writes
// the others after the description as "{enum: ["a","b"], ...}"; a model
// reads them there, so the mock does.
func describedChoice(s map[string]any) (any, bool) {
	d, _ := s["description"].(string)
	if i := strings.LastIndex(d, "\n\n{"); i >= 0 {
		d = d[i+2:]
	}
	if !strings.HasPrefix(d, "{") || !strings.HasSuffix(d, "}") {
		return nil, false
	}
	for _, key := range []string{"const", "enum"} {
		i := strings.Index(d, "{"+key+": ")
		if i < 0 {
			i = strings.Index(d, ", "+key+": ")
		}
		if i < 0 {
			continue
		}
		var v any
		if json.NewDecoder(strings.NewReader(d[strings.Index(d[i:], ": ")+i+2:])).Decode(&v) != nil {
			continue
		}
		if e, ok := v.([]any); key == "enum" {
			if !ok || len(e) == 0 {
				continue
			}
			v = e[0]
		}
		return v, true
	}
	return nil, false
}

// typeOf is a schema's type: its type, the first of a list that is not
// null, or what its keywords imply.
func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok && x != "null" {
				return x
			}
		}
		return "null"
	}
	switch {
	case s["properties"] != nil:
		return "object"
	case s["items"] != nil:
		return "array"
	}
	return ""
}

func (g schemaValue) object(s map[string]any, depth int) any {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if r, ok := r.(string); ok {
				required[r] = true
			}
		}
	}
	out := map[string]any{}
	for name, p := range props {
		if depth >= maxSchemaDepth && !required[name] {
			continue
		}
		out[name] = g.of(asSchema(p), depth+1)
	}
	return out
}

func (g schemaValue) array(s map[string]any, depth int) any {
	n, least := 1, 0
	if m, ok := s["minItems"].(float64); ok {
		n, least = max(n, int(m)), int(m)
	}
	if m, ok := s["maxItems"].(float64); ok && int(m) < n {
		n = int(m)
	}
	if depth >= maxSchemaDepth/2 {
		n = least // a recursive schema ends in empty arrays
	}
	items := asSchema(s["items"])
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		v := g.of(items, depth+1)
		if s["uniqueItems"] == true && i > 0 {
			v = distinct(v, i)
		}
		out = append(out, v)
	}
	return out
}

// distinct makes the ith of a list of unique items differ from the
// first, where its type allows.
func distinct(v any, i int) any {
	switch x := v.(type) {
	case string:
		return x + strings.Repeat("+", i)
	case float64:
		return x + float64(i)
	}
	return v
}

// stringFor is a string of the schema's format and length.
func stringFor(s map[string]any) string {
	v := "mock"
	switch s["format"] {
	case "date-time":
		v = "2026-01-01T00:00:00Z"
	case "date":
		v = "2026-01-01"
	case "time":
		v = "00:00:00Z"
	case "email":
		v = "mock@example.com"
	case "uri", "url":
		v = "https://example.com/mock"
	case "uuid":
		v = "00000000-0000-4000-8000-000000000000"
	case "ipv4":
		v = "192.0.2.1"
	case "ipv6":
		v = "2001:db8::1"
	case "hostname":
		v = "example.com"
	case "duration":
		v = "PT1S"
	}
	if m, ok := s["minLength"].(float64); ok && len(v) < int(m) {
		v += strings.Repeat("x", int(m)-len(v))
	}
	if m, ok := s["maxLength"].(float64); ok && len(v) > int(m) {
		v = v[:int(m)]
	}
	return v
}

// numberFor is a number within the schema's bounds: 1, or the nearest
// to it that they allow.
func numberFor(s map[string]any, integer bool) float64 {
	lo, hi := math.Inf(-1), math.Inf(1)
	if m, ok := s["minimum"].(float64); ok {
		lo = m
	}
	if m, ok := s["exclusiveMinimum"].(float64); ok {
		lo = math.Max(lo, m+step(integer))
	}
	if m, ok := s["maximum"].(float64); ok {
		hi = m
	}
	if m, ok := s["exclusiveMaximum"].(float64); ok {
		hi = math.Min(hi, m-step(integer))
	}
	v := math.Max(lo, math.Min(1, hi))
	if integer {
		v = math.Ceil(v)
	}
	if m, ok := s["multipleOf"].(float64); ok && m > 0 {
		v = math.Ceil(v/m) * m
	}
	return v
}

func step(integer bool) float64 {
	if integer {
		return 1
	}
	return 0.5
}

// resolve finds a local $ref ("#/$defs/x", "#/definitions/x", "#").
func (g schemaValue) resolve(ref string) map[string]any {
	path, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	var cur any = g.root
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	m, _ := cur.(map[string]any)
	return m
}

func asSchema(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
