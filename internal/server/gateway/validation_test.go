package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// Structured output held to one contract, whichever backend answers: a
// scripted upstream speaking both APIs answers each call with the text or
// tool call the test gives it, and the tests read the verdict the client
// got.

// reply is what the scripted upstream answers: text, or one tool call.
type reply struct {
	text     string
	tool     string // the tool call's name, when it makes one
	toolArgs string // its arguments, a JSON object
}

// scripted is an upstream on loopback that answers on both APIs' paths:
// call n gets replies[min(n, len-1)].
type scripted struct {
	url     string
	replies []reply
	calls   atomic.Int32
	mu      sync.Mutex
	paths   []string
}

func newScripted(t *testing.T, replies ...reply) *scripted {
	t.Helper()
	s := &scripted{replies: replies}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *scripted) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	n := int(s.calls.Add(1)) - 1
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	rp := s.replies[min(n, len(s.replies)-1)]
	var req struct {
		Stream bool `json:"stream"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	anthropic := strings.HasSuffix(r.URL.Path, "/messages")
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		if anthropic {
			w.Write(anthropicWhole(rp))
		} else {
			w.Write(openAIWhole(rp))
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	var events []string
	if anthropic {
		events = anthropicStream(rp)
	} else {
		events = openAIStream(rp)
	}
	for _, e := range events {
		fmt.Fprint(w, e)
		w.(http.Flusher).Flush()
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func openAIWhole(rp reply) []byte {
	msg := map[string]any{"role": "assistant", "content": rp.text}
	finish := "stop"
	if rp.tool != "" {
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": rp.tool, "arguments": rp.toolArgs}}}
		finish = "tool_calls"
	}
	return []byte(js(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}}))
}

func anthropicWhole(rp reply) []byte {
	block := map[string]any{"type": "text", "text": rp.text}
	stop := "end_turn"
	if rp.tool != "" {
		block = map[string]any{"type": "tool_use", "id": "toolu_1", "name": rp.tool, "input": json.RawMessage(rp.toolArgs)}
		stop = "tool_use"
	}
	return []byte(js(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 5, "output_tokens": 5}}))
}

// halves cuts s in two, so the answer comes in more than one delta.
func halves(s string) [2]string { return [2]string{s[:len(s)/2], s[len(s)/2:]} }

func openAIStream(rp reply) []string {
	chunk := func(delta map[string]any, finish any) string {
		return "data: " + js(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}) + "\n\n"
	}
	out := []string{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	finish := "stop"
	if rp.tool != "" {
		out = append(out, chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": rp.tool, "arguments": ""}}}}, nil))
		for _, part := range halves(rp.toolArgs) {
			out = append(out, chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
				"function": map[string]any{"arguments": part}}}}, nil))
		}
		finish = "tool_calls"
	} else {
		for _, part := range halves(rp.text) {
			out = append(out, chunk(map[string]any{"content": part}, nil))
		}
	}
	return append(out, chunk(map[string]any{}, finish), "data: [DONE]\n\n")
}

func anthropicStream(rp reply) []string {
	ev := func(typ string, v map[string]any) string {
		v["type"] = typ
		return "event: " + typ + "\ndata: " + js(v) + "\n\n"
	}
	out := []string{ev("message_start", map[string]any{"message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
		"model": "m", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 5, "output_tokens": 1}}})}
	stop := "end_turn"
	if rp.tool != "" {
		out = append(out, ev("content_block_start", map[string]any{"index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": rp.tool, "input": map[string]any{}}}))
		for _, part := range halves(rp.toolArgs) {
			out = append(out, ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}}))
		}
		stop = "tool_use"
	} else {
		out = append(out, ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}}))
		for _, part := range halves(rp.text) {
			out = append(out, ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": part}}))
		}
	}
	return append(out, ev("content_block_stop", map[string]any{"index": 0}),
		ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}}),
		ev("message_stop", map[string]any{}))
}

// validationStack is a gateway in front of up. Model "gpt" is served by
// the targets named (providers "oa", OpenAI kind, and "an", Anthropic
// kind, both at up), with on_invalid action.
func validationStack(t *testing.T, up *scripted, action string, targets ...string) (*stack, *gateway.Gateway) {
	t.Helper()
	return validationStackWith(t, up, config.Validation{OnInvalid: action}, targets...)
}

// validationStackWith is validationStack with the model's validation
// settings v.
func validationStackWith(t *testing.T, up *scripted, v config.Validation, targets ...string) (*stack, *gateway.Gateway) {
	t.Helper()
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers = []config.Provider{
			{Name: "oa", Kind: "openai", BaseURL: up.url + "/v1", Timeout: config.Duration(10e9), MaxInFlight: 16},
			{Name: "an", Kind: "anthropic", BaseURL: up.url + "/v1", Timeout: config.Duration(10e9), MaxInFlight: 16},
		}
		m := config.Model{Name: "gpt", Validation: v}
		for _, p := range targets {
			m.Targets = append(m.Targets, config.Target{Provider: p, Model: p + "-model"})
		}
		c.Models = []config.Model{m}
	})
	return s, s.gw
}

const (
	personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name","age"],"additionalProperties":false}`
	weatherTool  = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
)

func openAISchemaBody(stream bool) string {
	return fmt.Sprintf(`{"model":"gpt","stream":%v,"messages":[{"role":"user","content":"who?"}],`+
		`"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":%s}}}`, stream, personSchema)
}

func openAIToolsBody(stream bool) string {
	return fmt.Sprintf(`{"model":"gpt","stream":%v,"messages":[{"role":"user","content":"weather?"}],`+
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":%s}}]}`, stream, weatherTool)
}

func anthropicToolsBody(stream bool) string {
	return fmt.Sprintf(`{"model":"gpt","max_tokens":100,"stream":%v,"messages":[{"role":"user","content":"weather?"}],`+
		`"tools":[{"name":"get_weather","input_schema":%s}]}`, stream, weatherTool)
}

var (
	validPerson   = reply{text: `{"name":"Ada","age":36}`}
	invalidPerson = reply{text: `{"name":"Ada","age":"thirty-six"}`}
	validCall     = reply{tool: "get_weather", toolArgs: `{"city":"Oslo"}`}
	invalidCall   = reply{tool: "get_weather", toolArgs: `{"town":"Oslo"}`}
	undeclared    = reply{tool: "launch_rocket", toolArgs: `{"city":"Oslo"}`}
)

func verdicts(g *gateway.Gateway, provider, result, stream string) float64 {
	return testutil.ToFloat64(g.Metrics().Validation.WithLabelValues(provider, "gpt", result, stream))
}

// Whole answers, each dialect served by its own kind and by the other:
// the verdict is in the header, the answer as the provider made it.
func TestValidationWholeAnswers(t *testing.T) {
	cases := []struct {
		name, path, body, target string
		rp                       reply
		valid                    bool
		reason                   string
	}{
		{"openai json_schema valid", "/v1/chat/completions", openAISchemaBody(false), "oa", validPerson, true, ""},
		{"openai json_schema invalid", "/v1/chat/completions", openAISchemaBody(false), "oa", invalidPerson, false, "/age"},
		{"openai json_schema not json", "/v1/chat/completions", openAISchemaBody(false), "oa", reply{text: "Ada, 36"}, false, "not JSON"},
		{"openai tools valid", "/v1/chat/completions", openAIToolsBody(false), "oa", validCall, true, ""},
		{"openai tools invalid args", "/v1/chat/completions", openAIToolsBody(false), "oa", invalidCall, false, "get_weather"},
		{"openai tools undeclared", "/v1/chat/completions", openAIToolsBody(false), "oa", undeclared, false, "did not declare"},
		{"anthropic tools valid", "/v1/messages", anthropicToolsBody(false), "an", validCall, true, ""},
		{"anthropic tools invalid", "/v1/messages", anthropicToolsBody(false), "an", invalidCall, false, "city"},
		// Across dialects: the gateway translates, and checks all the same.
		// (response_format itself is not translated to Anthropic's API,
		// which has no such parameter: such a request skips those
		// targets, see translate.go.)
		{"openai client, anthropic backend, tool valid", "/v1/chat/completions", openAIToolsBody(false), "an", validCall, true, ""},
		{"openai client, anthropic backend, tool undeclared", "/v1/chat/completions", openAIToolsBody(false), "an", undeclared, false, "launch_rocket"},
		{"openai client, anthropic backend, tool invalid", "/v1/chat/completions", openAIToolsBody(false), "an", invalidCall, false, "city"},
		{"anthropic client, openai backend, tool valid", "/v1/messages", anthropicToolsBody(false), "oa", validCall, true, ""},
		{"anthropic client, openai backend, tool invalid", "/v1/messages", anthropicToolsBody(false), "oa", invalidCall, false, "city"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newScripted(t, tc.rp)
			s, g := validationStack(t, up, config.OnInvalidAnnotate, tc.target)
			status, hdr, body := s.do(tc.path, tc.body, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			want := map[bool]string{true: "valid", false: "invalid"}[tc.valid]
			if got := hdr.Get("X-Sluice-Validation"); got != want {
				t.Fatalf("X-Sluice-Validation %q, want %q (reason %q)", got, want, hdr.Get("X-Sluice-Validation-Reason"))
			}
			if reason := hdr.Get("X-Sluice-Validation-Reason"); !strings.Contains(reason, tc.reason) || (tc.valid != (reason == "")) {
				t.Fatalf("reason %q, want one naming %q", reason, tc.reason)
			}
			// The answer itself is relayed, in the client's API.
			if tc.path == "/v1/messages" && decode(t, body)["type"] != "message" ||
				tc.path != "/v1/messages" && decode(t, body)["object"] != "chat.completion" {
				t.Fatalf("answer %s not in the client's API", body)
			}
			if n := verdicts(g, tc.target, want, "false"); n != 1 {
				t.Fatalf("sluice_validation_total{provider=%s,result=%s} = %v, want 1", tc.target, want, n)
			}
		})
	}
}

// A request that declares no structured output is not checked.
func TestValidationNotAsked(t *testing.T) {
	up := newScripted(t, reply{text: "plain words"})
	s, g := validationStack(t, up, config.OnInvalidRefuse, "oa")
	status, hdr, body := s.do("/v1/chat/completions", `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 200 || hdr.Get("X-Sluice-Validation") != "" {
		t.Fatalf("status %d, X-Sluice-Validation %q: %s; want the answer unchecked", status, hdr.Get("X-Sluice-Validation"), body)
	}
	if n := verdicts(g, "oa", "valid", "false") + verdicts(g, "oa", "invalid", "false"); n != 0 {
		t.Fatalf("%v verdicts counted for an unchecked answer", n)
	}
}

func TestValidationJSONObject(t *testing.T) {
	const body = `{"model":"gpt","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`
	for _, tc := range []struct {
		text, want string
	}{{`{"a":1}`, "valid"}, {`[1,2]`, "invalid"}, {`hello`, "invalid"}} {
		up := newScripted(t, reply{text: tc.text})
		s, _ := validationStack(t, up, config.OnInvalidAnnotate, "oa")
		_, hdr, _ := s.do("/v1/chat/completions", body, nil)
		if got := hdr.Get("X-Sluice-Validation"); got != tc.want {
			t.Errorf("text %s: X-Sluice-Validation %q, want %q", tc.text, got, tc.want)
		}
	}
}

// refuse: an invalid answer is a 502 in the client's API, saying why.
func TestValidationRefuse(t *testing.T) {
	t.Run("openai", func(t *testing.T) {
		up := newScripted(t, invalidPerson)
		s, g := validationStack(t, up, config.OnInvalidRefuse, "oa")
		status, hdr, body := s.do("/v1/chat/completions", openAISchemaBody(false), nil)
		var v struct {
			Error struct{ Type, Message string }
		}
		json.Unmarshal(body, &v)
		if status != 502 || !strings.Contains(v.Error.Message, "failed validation") || !strings.Contains(v.Error.Message, "/age") ||
			hdr.Get("X-Sluice-Validation") != "invalid" {
			t.Fatalf("status %d %s: %s; want an OpenAI-shaped 502 naming the failure", status, hdr.Get("X-Sluice-Validation"), body)
		}
		if n := verdicts(g, "oa", "invalid", "false"); n != 1 {
			t.Fatalf("invalid verdicts %v, want 1", n)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		up := newScripted(t, invalidCall)
		s, _ := validationStack(t, up, config.OnInvalidRefuse, "oa")
		status, _, body := s.do("/v1/messages", anthropicToolsBody(false), nil)
		v := decode(t, body)
		if status != 502 || v["type"] != "error" || !strings.Contains(string(body), "failed validation") {
			t.Fatalf("status %d: %s; want an Anthropic-shaped 502", status, body)
		}
	})
	t.Run("valid passes", func(t *testing.T) {
		up := newScripted(t, validCall)
		s, _ := validationStack(t, up, config.OnInvalidRefuse, "an")
		if status, _, body := s.do("/v1/messages", anthropicToolsBody(false), nil); status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
	})
}

// retry: an invalid answer is not sent; the request goes
// to the next target, under the retry budget, through the engine's own
// retry. A backend of the other API answers the retry, translated.
func TestValidationRetry(t *testing.T) {
	t.Run("next target answers valid", func(t *testing.T) {
		up := newScripted(t, invalidCall, validCall)
		s, g := validationStack(t, up, config.OnInvalidRetry, "oa", "an")
		status, hdr, body := s.do("/v1/chat/completions", openAIToolsBody(false), nil)
		if status != 200 || hdr.Get("X-Sluice-Validation") != "valid" {
			t.Fatalf("status %d, verdict %q: %s", status, hdr.Get("X-Sluice-Validation"), body)
		}
		msg := decode(t, body)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		if args := msg["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"]; args != validCall.toolArgs {
			t.Fatalf("arguments %v, want the valid answer's", args)
		}
		if got := up.seen(); len(got) != 2 || got[0] != "/v1/chat/completions" || got[1] != "/v1/messages" {
			t.Fatalf("upstream calls %v, want the OpenAI target then the Anthropic one", got)
		}
		if verdicts(g, "oa", "invalid", "false") != 1 || verdicts(g, "an", "valid", "false") != 1 {
			t.Fatal("want one invalid verdict against oa and one valid against an")
		}
		if n := testutil.ToFloat64(g.Metrics().Retries.WithLabelValues("gpt", "an")); n != 1 {
			t.Fatalf("sluice_retries_total = %v, want 1", n)
		}
	})
	t.Run("no valid answer left: returned annotated", func(t *testing.T) {
		up := newScripted(t, invalidCall, invalidCall)
		s, _ := validationStack(t, up, config.OnInvalidRetry, "an", "oa")
		status, hdr, body := s.do("/v1/messages", anthropicToolsBody(false), nil)
		if status != 200 || hdr.Get("X-Sluice-Validation") != "invalid" {
			t.Fatalf("status %d, verdict %q: %s", status, hdr.Get("X-Sluice-Validation"), body)
		}
		if n := up.calls.Load(); n != 2 {
			t.Fatalf("%d upstream calls, want 2 (one retry)", n)
		}
	})
	// Annotate, written or by default (a client's impossible schema must
	// not spend the retry budget every client's failovers share).
	for _, action := range []string{config.OnInvalidAnnotate, ""} {
		t.Run("annotate does not retry "+action, func(t *testing.T) {
			up := newScripted(t, invalidPerson, validPerson)
			s, _ := validationStack(t, up, action, "oa", "an")
			_, hdr, _ := s.do("/v1/chat/completions", openAISchemaBody(false), nil)
			if hdr.Get("X-Sluice-Validation") != "invalid" || up.calls.Load() != 1 {
				t.Fatalf("verdict %q after %d calls; want the first answer, annotated", hdr.Get("X-Sluice-Validation"), up.calls.Load())
			}
		})
	}
}

// A schema that does not compile is the client's 400, before any
// upstream call, in its own API.
func TestValidationBadSchema(t *testing.T) {
	up := newScripted(t, validPerson)
	s, _ := validationStack(t, up, config.OnInvalidAnnotate, "oa")
	cases := []struct{ path, body, names string }{
		{"/v1/chat/completions", `{"model":"gpt","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":12}}}}`, "response_format.json_schema.schema"},
		{"/v1/chat/completions", `{"model":"gpt","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"$ref":"https://example.invalid/s.json"}}}}`, "remote $ref"},
		{"/v1/chat/completions", `{"model":"gpt","messages":[{"role":"user","content":"x"}],"response_format":{"type":"yaml"}}`, "response_format.type"},
		{"/v1/messages", `{"model":"gpt","max_tokens":10,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"t","input_schema":{"type":"object","properties":{"a":{"minimum":"zero"}}}}]}`, "tools[0].input_schema"},
		{"/v1/messages", `{"model":"gpt","max_tokens":10,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"t","input_schema":{"type":"object"}},{"name":"t","input_schema":{"type":"object"}}]}`, "declared twice"},
		{"/v1/chat/completions", `{"model":"gpt","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"t","parameters":{"description":"` + strings.Repeat("x", 70<<10) + `"}}}]}`, "at most"},
	}
	for _, tc := range cases {
		status, _, body := s.do(tc.path, tc.body, nil)
		if status != 400 || !strings.Contains(string(body), tc.names) {
			t.Errorf("%s: status %d: %.300s; want a 400 naming %q", tc.path, status, body, tc.names)
		}
		if tc.path == "/v1/messages" && decode(t, body)["type"] != "error" {
			t.Errorf("not Anthropic's error shape: %s", body)
		}
	}
	if n := up.calls.Load(); n != 0 {
		t.Fatalf("%d upstream calls for requests refused as bad", n)
	}
}

// streamVerdict reads a stream to its end and returns its events, the
// verdict event's data, if one came, and the response's HTTP trailers.
func streamVerdict(t *testing.T, s *stack, path, body string) (events []string, trailer map[string]any, trailers http.Header) {
	t.Helper()
	resp, err := s.post(t.Context(), path, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	trailers = resp.Trailer
	for _, ev := range strings.Split(buf.String(), "\n\n") {
		if strings.HasPrefix(ev, "event: sluice.validation\n") {
			if trailer != nil {
				t.Fatal("two trailers")
			}
			trailer = map[string]any{}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "event: sluice.validation\ndata: ")), &trailer); err != nil {
				t.Fatalf("trailer %q: %v", ev, err)
			}
			continue
		}
		if trailer != nil && strings.TrimSpace(ev) != "" {
			t.Fatalf("event after the trailer: %q", ev)
		}
		if strings.TrimSpace(ev) != "" {
			events = append(events, ev)
		}
	}
	return events, trailer, trailers
}

// Streams are judged at their end, the verdict sent in the response's
// HTTP trailers (X-Sluice-Validation, and -Reason when it is not
// valid), and counted. Nothing is added to the stream itself unless the
// model asks for the verdict event (validation.stream_event), which
// then follows the stream's own last event.
func TestValidationStreams(t *testing.T) {
	cases := []struct {
		name, path, body, target string
		rp                       reply
		valid                    bool
		last                     string // the stream's own last event, which the trailer follows
	}{
		{"openai schema valid", "/v1/chat/completions", openAISchemaBody(true), "oa", validPerson, true, "data: [DONE]"},
		{"openai schema invalid", "/v1/chat/completions", openAISchemaBody(true), "oa", invalidPerson, false, "data: [DONE]"},
		{"openai tools invalid", "/v1/chat/completions", openAIToolsBody(true), "oa", invalidCall, false, "data: [DONE]"},
		{"anthropic tools valid", "/v1/messages", anthropicToolsBody(true), "an", validCall, true, "event: message_stop"},
		{"anthropic tools invalid", "/v1/messages", anthropicToolsBody(true), "an", invalidCall, false, "event: message_stop"},
		{"openai client, anthropic stream, tool invalid", "/v1/chat/completions", openAIToolsBody(true), "an", invalidCall, false, "data: [DONE]"},
		{"openai client, anthropic stream, tool valid", "/v1/chat/completions", openAIToolsBody(true), "an", validCall, true, "data: [DONE]"},
		{"anthropic client, openai stream, tool invalid", "/v1/messages", anthropicToolsBody(true), "oa", invalidCall, false, "event: message_stop"},
	}
	for _, tc := range cases {
		for _, withEvent := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream_event=%v", tc.name, withEvent), func(t *testing.T) {
				up := newScripted(t, tc.rp, validPerson)
				// refuse and retry cannot apply once the stream went out.
				s, g := validationStackWith(t, up, config.Validation{OnInvalid: config.OnInvalidRefuse, StreamEvent: withEvent}, tc.target, tc.target)
				events, tr, trailers := streamVerdict(t, s, tc.path, tc.body)
				want := map[bool]string{true: "valid", false: "invalid"}[tc.valid]
				if got := trailers.Get("X-Sluice-Validation"); got != want || tc.valid != (trailers.Get("X-Sluice-Validation-Reason") == "") {
					t.Fatalf("trailers %v, want X-Sluice-Validation %s", trailers, want)
				}
				switch {
				case !withEvent && tr != nil:
					t.Fatalf("a verdict event in the stream, not asked for: %v", tr)
				case withEvent && tr == nil:
					t.Fatalf("no verdict event after %d events", len(events))
				case withEvent && (tr["type"] != "sluice.validation" || tr["valid"] != tc.valid || (tc.valid != (tr["reason"] == nil))):
					t.Fatalf("verdict event %v, want valid %v", tr, tc.valid)
				}
				if last := events[len(events)-1]; !strings.HasPrefix(last, tc.last) {
					t.Fatalf("the stream's last event %q, want %q", last, tc.last)
				}
				if up.calls.Load() != 1 {
					t.Fatalf("%d upstream calls: a stream is never retried", up.calls.Load())
				}
				if n := verdicts(g, tc.target, want, "true"); n != 1 {
					t.Fatalf("stream verdicts %s = %v, want 1", want, n)
				}
			})
		}
	}
}

// count_in_breaker: invalid answers are the provider's failures in its
// breaker, which opens on them as on errors; without it, they are not.
func TestValidationCountInBreaker(t *testing.T) {
	for _, count := range []bool{true, false} {
		t.Run(fmt.Sprint("count_in_breaker=", count), func(t *testing.T) {
			up := newScripted(t, invalidPerson)
			s := newStack(t, mock.Config{}, func(c *config.Config) {
				c.Log.Format = "json"
				c.Providers = []config.Provider{{Name: "oa", Kind: "openai", BaseURL: up.url + "/v1", Timeout: config.Duration(10e9), MaxInFlight: 16,
					Breaker: &config.Breaker{MinCalls: 4, ErrorRate: 0.5, Window: config.Duration(60e9), OpenFor: config.Duration(60e9)}}}
				c.Models = []config.Model{{Name: "gpt", Targets: []config.Target{{Provider: "oa", Model: "m"}},
					Validation: config.Validation{OnInvalid: config.OnInvalidAnnotate, CountInBreaker: count}}}
			})
			for i := range 6 {
				status, hdr, body := s.do("/v1/chat/completions", openAISchemaBody(false), nil)
				if count && i >= 4 {
					// Open: the gateway refuses at once, no upstream call.
					if status != 503 {
						t.Fatalf("call %d: status %d, want 503 from the open breaker: %s", i, status, body)
					}
					continue
				}
				if status != 200 || hdr.Get("X-Sluice-Validation") != "invalid" {
					t.Fatalf("call %d: status %d, verdict %q", i, status, hdr.Get("X-Sluice-Validation"))
				}
			}
			opened := strings.Contains(s.logText(), `"to":"open"`)
			if opened != count {
				t.Fatalf("breaker opened: %v, want %v:\n%s", opened, count, s.logText())
			}
		})
	}
}
