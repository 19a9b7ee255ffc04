package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The 400s a vendor answers a request it will not take, in its own
// shape and, as far as they are known, its own words, so that a client
// or gateway that sends one learns it from the mock and not in
// production. They count as bad requests in Stats.
//
// OpenAI's chat completions:
//
//	no messages        "Missing required parameter: 'messages'."
//	                   (param messages, code missing_required_parameter)
//	messages []        "Invalid 'messages': empty array. Expected an array
//	                   with minimum length 1, but got an empty array
//	                   instead." (code empty_array)
//	response_format json_schema without json_schema or its name:
//	                   "Missing required parameter: 'response_format.
//	                   json_schema.name'." and the like
//
// Its Responses API:
//
//	no input           "Missing required parameter: 'input'." The API
//	                   refuses a request with only instructions; one with
//	                   previous_response_id or a stored prompt may leave
//	                   input out, and the mock, which keeps no responses,
//	                   answers it from instructions alone.
//	input []           `One of "input" or "previous_response_id" or
//	                   "prompt" must be provided.` (param input)
//	text.format json_schema without name:
//	                   "Missing required parameter: 'text.format.name'."
//
// Both refuse a strict schema that strict mode cannot hold: chat's
// response_format json_schema or a function tool with strict: true, and
// the Responses API's text.format or function tool with strict: true.
// (Its function tools default to strict when strict is left out, but
// the API then makes a loose schema strict itself rather than refuse it,
// so only an explicit true is checked.) Strict mode wants every object
// schema, at every depth (properties, items, anyOf, $defs), to set
// additionalProperties false and to list every property in required:
//
//	Invalid schema for response_format 'w': In context=('properties',
//	'home'), 'additionalProperties' is required to be supplied and to be
//	false.
//	Invalid schema for function 'f': In context=(), 'required' is required
//	to be supplied and to be an array including every key in properties.
//	Missing 'days'.
//
// with param response_format (code null), tools[i].function.parameters
// (chat) or tools[i].parameters (Responses; code
// invalid_function_parameters for both), or text.format.schema (code
// invalid_json_schema).
//
// Anthropic's Messages API (its body {"type":"error","error":{"type":
// "invalid_request_error","message":...}}):
//
//	no messages        "messages: Field required"
//	messages []        "messages: at least one message is required"
//	no max_tokens      "max_tokens: Field required" (the API has no
//	                   default cap)
//	output_config.format's schema, or the input_schema of a tool with
//	strict: true, with an object schema that does not set
//	additionalProperties false: "output_config.format.schema: For
//	'object' type, 'additionalProperties' must be explicitly set to
//	false" ("'additionalProperties: true' is not supported. Please set
//	'additionalProperties' to false" when it is true; tools.i.custom.
//	input_schema for a tool). Anthropic, unlike OpenAI, lets properties
//	be optional, so required is not checked; nor are the keywords its
//	structured outputs leave out (minimum, pattern and the like), which
//	the mock's values (schemavalue.go) meet anyway.

// requestError is a 400 whose body is the vendor's, written as is.
type requestError struct{ body []byte }

func (e *requestError) Error() string { return string(e.body) }

// oaiRefusal is OpenAI's invalid_request_error with param and code.
func oaiRefusal(msg, param string, code any) error {
	return &requestError{oaiError(msg, "invalid_request_error", param, code, nil)}
}

func missingParam(param string) error {
	return oaiRefusal("Missing required parameter: '"+param+"'.", param, "missing_required_parameter")
}

func anthropicRefusal(msg string) error {
	return &requestError{anthropic{}.errorJSON(400, msg)}
}

// absent says a field was left out or null.
func absent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// emptyArray says raw is [].
func emptyArray(raw json.RawMessage) bool {
	var a []json.RawMessage
	return json.Unmarshal(raw, &a) == nil && a != nil && len(a) == 0
}

// chatRefusal is OpenAI's 400 for a chat request it refuses, or nil.
func chatRefusal(body []byte) error {
	var q struct {
		Messages       json.RawMessage `json:"messages"`
		ResponseFormat *struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
				Strict bool            `json:"strict"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Tools []struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
				Strict     bool            `json:"strict"`
			} `json:"function"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &q)
	switch {
	case absent(q.Messages):
		return missingParam("messages")
	case emptyArray(q.Messages):
		return oaiRefusal("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array")
	}
	for i, t := range q.Tools {
		if f := t.Function; f != nil && f.Strict {
			if why := strictProblem(f.Parameters); why != "" {
				return oaiRefusal(fmt.Sprintf("Invalid schema for function '%s': %s", f.Name, why), fmt.Sprintf("tools[%d].function.parameters", i), "invalid_function_parameters")
			}
		}
	}
	if rf := q.ResponseFormat; rf != nil && rf.Type == "json_schema" {
		js := rf.JSONSchema
		switch {
		case js == nil:
			return missingParam("response_format.json_schema")
		case js.Name == "":
			return missingParam("response_format.json_schema.name")
		case js.Strict:
			if why := strictProblem(js.Schema); why != "" {
				return oaiRefusal(fmt.Sprintf("Invalid schema for response_format '%s': %s", js.Name, why), "response_format", nil)
			}
		}
	}
	return nil
}

// refusal is OpenAI's 400 for a Responses request it refuses, or nil.
func (q *responsesRequest) refusal() error {
	stored := q.PreviousResponseID != "" || !absent(q.Prompt)
	switch {
	case absent(q.Input) && !stored:
		return missingParam("input")
	case emptyArray(q.Input) && !stored:
		return oaiRefusal(`One of "input" or "previous_response_id" or "prompt" must be provided.`, "input", nil)
	}
	for i, t := range q.Tools {
		if t.Type == "function" && t.Strict != nil && *t.Strict {
			if why := strictProblem(t.Parameters); why != "" {
				return oaiRefusal(fmt.Sprintf("Invalid schema for function '%s': %s", t.Name, why), fmt.Sprintf("tools[%d].parameters", i), "invalid_function_parameters")
			}
		}
	}
	if f := q.format(); f != nil && f.Type == "json_schema" {
		if f.Name == "" {
			return missingParam("text.format.name")
		}
		if f.Strict != nil && *f.Strict {
			if why := strictProblem(f.Schema); why != "" {
				return oaiRefusal(fmt.Sprintf("Invalid schema for response_format '%s': %s", f.Name, why), "text.format.schema", "invalid_json_schema")
			}
		}
	}
	return nil
}

// messagesRefusal is Anthropic's 400 for a Messages request it refuses,
// or nil.
func messagesRefusal(body []byte) error {
	var q struct {
		Messages     json.RawMessage `json:"messages"`
		MaxTokens    json.RawMessage `json:"max_tokens"`
		OutputConfig *struct {
			Format *struct {
				Type   string          `json:"type"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"output_config"`
		Tools []struct {
			InputSchema json.RawMessage `json:"input_schema"`
			Strict      bool            `json:"strict"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &q)
	switch {
	case absent(q.Messages):
		return anthropicRefusal("messages: Field required")
	case emptyArray(q.Messages):
		return anthropicRefusal("messages: at least one message is required")
	case absent(q.MaxTokens):
		return anthropicRefusal("max_tokens: Field required")
	}
	if oc := q.OutputConfig; oc != nil && oc.Format != nil && oc.Format.Type == "json_schema" {
		if why := closedProblem(oc.Format.Schema); why != "" {
			return anthropicRefusal("output_config.format.schema: " + why)
		}
	}
	for i, t := range q.Tools {
		if t.Strict {
			if why := closedProblem(t.InputSchema); why != "" {
				return anthropicRefusal(fmt.Sprintf("tools.%d.custom.input_schema: %s", i, why))
			}
		}
	}
	return nil
}

// schemaNode is one schema of a document, with its context: the path of
// keys that leads to it.
type schemaNode struct {
	s       *orderedObject
	context []string
}

// subschemas lists a schema's children, in the order OpenAI's errors
// name them: properties, items, anyOf, then $defs and definitions.
func (n schemaNode) subschemas() []schemaNode {
	var out []schemaNode
	child := func(raw json.RawMessage, keys ...string) {
		if o, ok := parseOrdered(raw); ok {
			out = append(out, schemaNode{o, append(append([]string(nil), n.context...), keys...)})
		}
	}
	props := func(k string) {
		if o, ok := parseOrdered(n.s.get(k)); ok {
			for _, name := range o.keys {
				child(o.get(name), k, name)
			}
		}
	}
	props("properties")
	child(n.s.get("items"), "items")
	var branches []json.RawMessage
	json.Unmarshal(n.s.get("anyOf"), &branches)
	for i, b := range branches {
		child(b, "anyOf", strconv.Itoa(i))
	}
	props("$defs")
	props("definitions")
	return out
}

// isObject says a schema describes an object: its type is, or one of
// its types, or it has properties.
func (n schemaNode) isObject() bool {
	var t any
	json.Unmarshal(n.s.get("type"), &t)
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
	}
	return n.s.get("properties") != nil
}

// walk visits a schema document depth first, stopping at the first
// problem a check finds.
func walk(schema json.RawMessage, check func(n schemaNode) string) string {
	root, ok := parseOrdered(schema)
	if !ok {
		return ""
	}
	stack := []schemaNode{{root, nil}}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if why := check(n); why != "" {
			return why
		}
		kids := n.subschemas()
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
	}
	return ""
}

// strictProblem is why OpenAI's strict mode refuses schema, "" if it
// takes it.
func strictProblem(schema json.RawMessage) string {
	return walk(schema, func(n schemaNode) string {
		if !n.isObject() {
			return ""
		}
		ctx := pyTuple(n.context)
		if string(bytes.TrimSpace(n.s.get("additionalProperties"))) != "false" {
			return "In context=" + ctx + ", 'additionalProperties' is required to be supplied and to be false."
		}
		var required []string
		json.Unmarshal(n.s.get("required"), &required)
		listed := map[string]bool{}
		for _, r := range required {
			listed[r] = true
		}
		props, _ := parseOrdered(n.s.get("properties"))
		if props == nil {
			props = &orderedObject{}
		}
		for _, k := range props.keys {
			if !listed[k] {
				return "In context=" + ctx + ", 'required' is required to be supplied and to be an array including every key in properties. Missing '" + k + "'."
			}
		}
		for _, r := range required {
			if props.get(r) == nil {
				return "In context=" + ctx + ", 'required' must be an array that includes every key in `properties`. Extra required key '" + r + "' supplied."
			}
		}
		return ""
	})
}

// closedProblem is why Anthropic's structured outputs refuse schema, ""
// if they take it: an object schema that does not set
// additionalProperties false.
func closedProblem(schema json.RawMessage) string {
	return walk(schema, func(n schemaNode) string {
		if !n.isObject() {
			return ""
		}
		switch string(bytes.TrimSpace(n.s.get("additionalProperties"))) {
		case "false":
			return ""
		case "true":
			return "For 'object' type, 'additionalProperties: true' is not supported. Please set 'additionalProperties' to false"
		}
		return "For 'object' type, 'additionalProperties' must be explicitly set to false"
	})
}

// pyTuple writes a context as OpenAI's errors do, a Python tuple of
// strings: (), ('items',), ('properties', 'a').
func pyTuple(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = "'" + k + "'"
	}
	if len(q) == 1 {
		return "(" + q[0] + ",)"
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// orderedObject is a JSON object with its keys in the order written, so
// that an error names the first offending property as the vendor's
// does.
type orderedObject struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *orderedObject) get(k string) json.RawMessage { return o.vals[k] }

func parseOrdered(raw json.RawMessage) (*orderedObject, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	o := &orderedObject{vals: map[string]json.RawMessage{}}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if _, dup := o.vals[k]; !dup {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	return o, true
}
