package mock

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// The vendors' 400s for requests they refuse, in their shapes: OpenAI's
// error with param and code, Anthropic's invalid_request_error; each
// counts as a bad request.
func TestVendorRefusals(t *testing.T) {
	s, url := startMock(t, instant())
	const (
		msg    = `"messages":[{"role":"user","content":"hi"}]`
		loose  = `{"type":"object","properties":{"city":{"type":"string"}}}`
		open   = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
		nested = `{"type":"object","properties":{"home":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"days":{"type":"integer"}},"required":["home","days"],"additionalProperties":false}`
		items  = `{"type":"object","properties":{"stops":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}}},"required":["stops"],"additionalProperties":false}`
		extra  = `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"],"additionalProperties":false}`
		anyOf  = `{"type":"object","properties":{"u":{"anyOf":[{"type":"object","properties":{}},{"type":"null"}]}},"required":["u"],"additionalProperties":false}`
		defs   = `{"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"],"additionalProperties":false,"$defs":{"P":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}}}`
	)
	strictTool := func(schema string) string {
		return `{"model":"m",` + msg + `,"tools":[{"type":"function","function":{"name":"loose","parameters":` + loose + `}},{"type":"function","function":{"name":"f","strict":true,"parameters":` + schema + `}}]}`
	}
	rf := func(schema string) string {
		return `{"model":"m",` + msg + `,"response_format":{"type":"json_schema","json_schema":{"name":"w","strict":true,"schema":` + schema + `}}}`
	}
	ctxMsg := func(ctx, what string) string {
		return "In context=" + ctx + ", " + what
	}
	const (
		addl = "'additionalProperties' is required to be supplied and to be false."
		req  = "'required' is required to be supplied and to be an array including every key in properties. Missing "
	)
	bad := 0
	for _, c := range []struct {
		path, body     string
		message, param string
		code           any
		anthropic      bool
		ok             bool // taken: the vendor answers it
	}{
		{path: "/v1/chat/completions", body: `{"model":"m"}`, message: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter"},
		{path: "/v1/chat/completions", body: `{"model":"m","messages":null}`, message: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter"},
		{path: "/v1/chat/completions", body: `{"model":"m","messages":[]}`, message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", param: "messages", code: "empty_array"},
		{path: "/v1/chat/completions", body: strictTool(loose), message: "Invalid schema for function 'f': " + ctxMsg("()", addl), param: "tools[1].function.parameters", code: "invalid_function_parameters"},
		{path: "/v1/chat/completions", body: strictTool(nested), message: "Invalid schema for function 'f': " + ctxMsg("('properties', 'home')", addl), param: "tools[1].function.parameters", code: "invalid_function_parameters"},
		{path: "/v1/chat/completions", body: strictTool(items), message: "Invalid schema for function 'f': " + ctxMsg("('properties', 'stops', 'items')", req+"'b'."), param: "tools[1].function.parameters", code: "invalid_function_parameters"},
		{path: "/v1/chat/completions", body: strictTool(weatherSchema), ok: true},
		{path: "/v1/chat/completions", body: rf(open), message: "Invalid schema for response_format 'w': " + ctxMsg("()", addl), param: "response_format"},
		{path: "/v1/chat/completions", body: rf(strings.Replace(weatherSchema, `"required":["city","days","metric"]`, `"required":["city"]`, 1)), message: "Invalid schema for response_format 'w': " + ctxMsg("()", req+"'days'."), param: "response_format"},
		{path: "/v1/chat/completions", body: rf(extra), message: "Invalid schema for response_format 'w': " + ctxMsg("()", "'required' must be an array that includes every key in `properties`. Extra required key 'b' supplied."), param: "response_format"},
		{path: "/v1/chat/completions", body: rf(anyOf), message: "Invalid schema for response_format 'w': " + ctxMsg("('properties', 'u', 'anyOf', '0')", addl), param: "response_format"},
		{path: "/v1/chat/completions", body: rf(defs), message: "Invalid schema for response_format 'w': " + ctxMsg("('$defs', 'P')", req+"'x'."), param: "response_format"},
		{path: "/v1/chat/completions", body: rf(weatherSchema), ok: true},
		// Not strict: the schema is a hint, and any goes.
		{path: "/v1/chat/completions", body: strings.Replace(rf(loose), `"strict":true`, `"strict":false`, 1), ok: true},
		{path: "/v1/chat/completions", body: `{"model":"m",` + msg + `,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}}`, message: "Missing required parameter: 'response_format.json_schema.name'.", param: "response_format.json_schema.name", code: "missing_required_parameter"},

		{path: "/v1/responses", body: `{"model":"m","instructions":"be brief"}`, message: "Missing required parameter: 'input'.", param: "input", code: "missing_required_parameter"},
		{path: "/v1/responses", body: `{"model":"m","input":[]}`, message: `One of "input" or "previous_response_id" or "prompt" must be provided.`, param: "input"},
		{path: "/v1/responses", body: `{"model":"m","instructions":"be brief","previous_response_id":"resp_1"}`, ok: true},
		{path: "/v1/responses", body: `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","strict":true,"parameters":` + loose + `}]}`, message: "Invalid schema for function 'f': " + ctxMsg("()", addl), param: "tools[0].parameters", code: "invalid_function_parameters"},
		// strict left out: the API makes the schema strict itself.
		{path: "/v1/responses", body: `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":` + loose + `}]}`, ok: true},
		{path: "/v1/responses", body: `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"w","strict":true,"schema":` + open + `}}}`, message: "Invalid schema for response_format 'w': " + ctxMsg("()", addl), param: "text.format.schema", code: "invalid_json_schema"},
		{path: "/v1/responses", body: `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","schema":` + weatherSchema + `}}}`, message: "Missing required parameter: 'text.format.name'.", param: "text.format.name", code: "missing_required_parameter"},

		{path: "/v1/messages", body: `{"model":"c","max_tokens":10}`, anthropic: true, message: "messages: Field required"},
		{path: "/v1/messages", body: `{"model":"c","max_tokens":10,"messages":[]}`, anthropic: true, message: "messages: at least one message is required"},
		{path: "/v1/messages", body: `{"model":"c",` + msg + `}`, anthropic: true, message: "max_tokens: Field required"},
		{path: "/v1/messages", body: `{"model":"c","max_tokens":10,` + msg + `,"output_config":{"format":{"type":"json_schema","schema":` + open + `}}}`, anthropic: true, message: "output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false"},
		{path: "/v1/messages", body: `{"model":"c","max_tokens":10,` + msg + `,"output_config":{"format":{"type":"json_schema","schema":{"type":"object","additionalProperties":true}}}}`, anthropic: true, message: "output_config.format.schema: For 'object' type, 'additionalProperties: true' is not supported. Please set 'additionalProperties' to false"},
		// Anthropic lets properties be optional.
		{path: "/v1/messages", body: `{"model":"c","max_tokens":10,` + msg + `,"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}}}`, anthropic: true, ok: true},
		{path: "/v1/messages", body: `{"model":"c","max_tokens":10,` + msg + `,"tools":[{"name":"f","input_schema":` + loose + `},{"name":"g","strict":true,"input_schema":` + nested + `}]}`, anthropic: true, message: "tools.1.custom.input_schema: For 'object' type, 'additionalProperties' must be explicitly set to false"},
		{path: "/v1/messages", body: `{"model":"c","max_tokens":10,` + msg + `,"tools":[{"name":"f","input_schema":` + loose + `}]}`, anthropic: true, ok: true},
	} {
		resp := postJSON(t, context.Background(), url+c.path, c.body)
		if c.ok {
			decode(t, resp, http.StatusOK)
			continue
		}
		bad++
		m := decode(t, resp, http.StatusBadRequest)
		if c.anthropic {
			if m["type"] != "error" || path(m, "error", "type") != "invalid_request_error" || path(m, "error", "message") != c.message {
				t.Errorf("%s %s:\n got %s\nwant message %q", c.path, c.body, compact(t, m), c.message)
			}
			continue
		}
		e, _ := m["error"].(map[string]any)
		if e["type"] != "invalid_request_error" || e["message"] != c.message || e["param"] != c.param || e["code"] != c.code {
			t.Errorf("%s %s:\n got %s\nwant message %q, param %q, code %v", c.path, c.body, compact(t, m), c.message, c.param, c.code)
		}
		if _, ok := e["code"]; !ok {
			t.Errorf("%s: code missing: %s", c.path, compact(t, m))
		}
	}
	if st := s.Stats(); st.BadRequests != int64(bad) {
		t.Errorf("stats %+v, want %d bad requests", st, bad)
	}
}

// A native API's call is not held to Anthropic's rules, though the
// Messages handler serves it: Gemini takes a response schema without
// additionalProperties.
func TestNativeCallsSkipAnthropicRefusals(t *testing.T) {
	_, url := startMock(t, instant())
	body := `{"contents":[{"role":"user","parts":[{"text":"weather?"}]}],"generationConfig":{"responseMimeType":"application/json",` +
		`"responseSchema":{"type":"OBJECT","properties":{"city":{"type":"STRING"}}}}}`
	m := decode(t, postJSON(t, context.Background(), url+"/v1beta/models/gemini-2.5-flash:generateContent", body), http.StatusOK)
	if got := path(m, "candidates", 0, "content", "parts", 0, "text"); got != `{"city":"mock"}` {
		t.Errorf("Gemini JSON answer %v: %s", got, compact(t, m))
	}
}
