package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The Responses API's golden files live under testdata/responsesapi:
// requests (Responses → chat), answers (chat.completion → response) and
// streams (chunks → response.* events), compared as the other golden
// files are (golden_test.go).

func TestResponsesAPIGoldenRequests(t *testing.T) {
	golden(t, "responsesapi/requests", ".json", func(in []byte, _ string) ([]byte, error) {
		r, err := ResponsesToChat(in, Options{})
		if err != nil {
			return nil, err
		}
		return r.Body, nil
	})
}

func TestResponsesAPIGoldenAnswers(t *testing.T) {
	golden(t, "responsesapi/answers", ".json", func(in []byte, _ string) ([]byte, error) {
		return ChatToResponse(in, goldenCreated)
	})
}

// A case named error* ends with an upstream error event.
func TestResponsesAPIGoldenStreams(t *testing.T) {
	golden(t, "responsesapi/streams", ".sse", func(in []byte, name string) ([]byte, error) {
		events, n := ParseEvents(in)
		if n != len(in) {
			t.Errorf("%s: %d trailing bytes are not a whole event", name, len(in)-n)
		}
		s := NewStreamToResponses(StreamConfig{Created: goldenCreated})
		var out []Event
		for _, ev := range events {
			o, err := s.Feed(ev)
			if err != nil {
				return nil, err
			}
			out = append(out, o...)
		}
		err := s.Close()
		if strings.HasPrefix(name, "error") {
			if !errors.Is(err, ErrStreamFailed) {
				t.Errorf("Close = %v, want ErrStreamFailed", err)
			}
		} else if err != nil {
			t.Errorf("Close = %v", err)
		}
		return Encode(out), nil
	})
}

// What each golden request's translation reports besides its body.
func TestResponsesToChatReports(t *testing.T) {
	for _, tc := range []struct {
		name         string
		stream       bool
		includeUsage bool
		dropped      []string
	}{
		{"string_input", false, false, nil},
		{"conversation", false, false, nil},
		{"function_calls", true, true, nil},
		{"structured", false, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ResponsesToChat(readGolden(t, "responsesapi/requests/"+tc.name+".in.json"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stream != tc.stream || res.IncludeUsage != tc.includeUsage {
				t.Errorf("Stream %v IncludeUsage %v, want %v %v", res.Stream, res.IncludeUsage, tc.stream, tc.includeUsage)
			}
			if !slices.Equal(res.Dropped, tc.dropped) {
				t.Errorf("Dropped %q, want %q", res.Dropped, tc.dropped)
			}
		})
	}
}

// responsesWith is a Responses request with one more field.
func responsesWith(extra string) string {
	return `{"model":"m","input":"hi"` + extra + `}`
}

// responsesItem is a Responses request whose input is a user turn and
// then item.
func responsesItem(item string) string {
	return `{"model":"m","input":[{"role":"user","content":"hi"},` + item + `]}`
}

// responsesRefusals: every parameter a Responses request can hold that
// Chat Completions cannot carry, the Param and Path a refusal names, and
// whether it is Neutral (dropped by default) or refused by default.
var responsesRefusals = []struct {
	name, body, param, path string
	neutral                 bool
}{
	// No counterpart, each changing what the answer is: refused.
	{"previous_response_id", responsesWith(`,"previous_response_id":"resp_1"`), "previous_response_id", "previous_response_id", false},
	{"conversation", responsesWith(`,"conversation":"conv_1"`), "conversation", "conversation", false},
	{"conversation object", responsesWith(`,"conversation":{"id":"conv_1"}`), "conversation", "conversation", false},
	{"background", responsesWith(`,"background":true`), "background", "background", false},
	{"prompt", responsesWith(`,"prompt":{"id":"pmpt_1","version":"2"}`), "prompt", "prompt", false},
	{"max_tool_calls", responsesWith(`,"max_tool_calls":3`), "max_tool_calls", "max_tool_calls", false},
	{"unknown parameter", responsesWith(`,"context_management":[{"type":"compaction"}]`), "context_management", "context_management", false},
	{"web_search tool", responsesWith(`,"tools":[{"type":"web_search"}]`), "tools.type", "tools[0].type", false},
	{"web_search_preview tool", responsesWith(`,"tools":[{"type":"function","name":"f"},{"type":"web_search_preview"}]`), "tools.type", "tools[1].type", false},
	{"file_search tool", responsesWith(`,"tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]`), "tools.type", "tools[0].type", false},
	{"code_interpreter tool", responsesWith(`,"tools":[{"type":"code_interpreter","container":{"type":"auto"}}]`), "tools.type", "tools[0].type", false},
	{"computer_use_preview tool", responsesWith(`,"tools":[{"type":"computer_use_preview","display_width":1024,"display_height":768,"environment":"browser"}]`), "tools.type", "tools[0].type", false},
	{"image_generation tool", responsesWith(`,"tools":[{"type":"image_generation"}]`), "tools.type", "tools[0].type", false},
	{"mcp tool", responsesWith(`,"tools":[{"type":"mcp","server_label":"x","server_url":"https://x"}]`), "tools.type", "tools[0].type", false},
	{"local_shell tool", responsesWith(`,"tools":[{"type":"local_shell"}]`), "tools.type", "tools[0].type", false},
	{"custom tool", responsesWith(`,"tools":[{"type":"custom","name":"x"}]`), "tools.type", "tools[0].type", false},
	{"function tool extra key", responsesWith(`,"tools":[{"type":"function","name":"f","defer_loading":true}]`), "tools.defer_loading", "tools[0].defer_loading", false},
	{"built-in tool_choice", responsesWith(`,"tool_choice":{"type":"web_search_preview"}`), "tool_choice", "tool_choice.type", false},
	{"allowed_tools tool_choice", responsesWith(`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}`), "tool_choice", "tool_choice.type", false},
	{"mcp tool_choice", responsesWith(`,"tool_choice":{"type":"mcp","server_label":"x"}`), "tool_choice", "tool_choice.type", false},
	{"text format other", responsesWith(`,"text":{"format":{"type":"grammar","grammar":"x"}}`), "text.format", "text.format.type", false},
	{"item_reference", responsesItem(`{"type":"item_reference","id":"msg_1"}`), "input.item_reference", "input[1]", false},
	{"web_search_call", responsesItem(`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"x"}}`), "input.web_search_call", "input[1]", false},
	{"file_search_call", responsesItem(`{"type":"file_search_call","id":"fs_1","queries":["x"],"status":"completed"}`), "input.file_search_call", "input[1]", false},
	{"computer_call", responsesItem(`{"type":"computer_call","id":"cu_1","call_id":"c","action":{"type":"screenshot"},"pending_safety_checks":[],"status":"completed"}`), "input.computer_call", "input[1]", false},
	{"computer_call_output", responsesItem(`{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,AA=="}}`), "input.computer_call_output", "input[1]", false},
	{"custom_tool_call_output", responsesItem(`{"type":"custom_tool_call_output","call_id":"c","output":"x"}`), "input.custom_tool_call_output", "input[1]", false},
	{"image_file_id", responsesItem(`{"role":"user","content":[{"type":"input_image","file_id":"file_1","detail":"auto"}]}`), "input.content.file_id", "input[1].content[0].file_id", false},
	{"file_url", responsesItem(`{"role":"user","content":[{"type":"input_file","file_url":"https://x/y.pdf"}]}`), "input.content.file_url", "input[1].content[0].file_url", false},
	{"image in system message", responsesItem(`{"role":"system","content":[{"type":"input_image","image_url":"https://x/y.png","detail":"auto"}]}`), "input.content.input_image", "input[1].content[0]", false},
	{"audio part", responsesItem(`{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}`), "input.content.input_audio", "input[1].content[0]", false},
	{"image in tool output", responsesItem(`{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://x/y.png"}]}`), "input.output.input_image", "input[1].output[0]", false},
	{"message extra key", responsesItem(`{"role":"user","content":"x","name":"bob"}`), "input.name", "input[1].name", false},

	// What leaves the answer's shape alone: dropped by default.
	{"store", responsesWith(`,"store":true`), "store", "store", true},
	{"metadata", responsesWith(`,"metadata":{"k":"v"}`), "metadata", "metadata", true},
	{"service_tier", responsesWith(`,"service_tier":"flex"`), "service_tier", "service_tier", true},
	{"prompt_cache_key", responsesWith(`,"prompt_cache_key":"k"`), "prompt_cache_key", "prompt_cache_key", true},
	{"prompt_cache_retention", responsesWith(`,"prompt_cache_retention":"24h"`), "prompt_cache_retention", "prompt_cache_retention", true},
	{"safety_identifier", responsesWith(`,"safety_identifier":"h"`), "safety_identifier", "safety_identifier", true},
	{"top_logprobs", responsesWith(`,"top_logprobs":5`), "top_logprobs", "top_logprobs", true},
	{"truncation auto", responsesWith(`,"truncation":"auto"`), "truncation", "truncation", true},
	{"include", responsesWith(`,"include":["reasoning.encrypted_content"]`), "include", "include", true},
	{"include_obfuscation", responsesWith(`,"stream":true,"stream_options":{"include_obfuscation":true}`), "stream_options.include_obfuscation", "stream_options.include_obfuscation", true},
	{"text.verbosity", responsesWith(`,"text":{"verbosity":"low"}`), "text.verbosity", "text.verbosity", true},
	{"reasoning.summary", responsesWith(`,"reasoning":{"effort":"high","summary":"auto"}`), "reasoning.summary", "reasoning.summary", true},
	{"reasoning.generate_summary", responsesWith(`,"reasoning":{"generate_summary":"concise"}`), "reasoning.generate_summary", "reasoning.generate_summary", true},
	{"reasoning item", responsesItem(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thinking"}],"encrypted_content":"gAAA"}`), "input.reasoning", "input[1]", true},
	{"incomplete status", responsesItem(`{"type":"message","role":"assistant","status":"incomplete","content":[{"type":"output_text","text":"cut","annotations":[]}]}`), "input.status", "input[1].status", true},
	{"phase", responsesItem(`{"type":"message","role":"assistant","phase":"final_answer","content":[{"type":"output_text","text":"ok","annotations":[]}]}`), "input.phase", "input[1].phase", true},
	{"annotations", responsesItem(`{"role":"assistant","content":[{"type":"output_text","text":"see [1]","annotations":[{"type":"url_citation","url":"https://x","title":"x","start_index":4,"end_index":7}]}]}`), "input.content.annotations", "input[1].content[0].annotations", true},
	{"logprobs", responsesItem(`{"role":"assistant","content":[{"type":"output_text","text":"a","annotations":[],"logprobs":[{"token":"a","logprob":-0.1,"bytes":[97],"top_logprobs":[]}]}]}`), "input.content.logprobs", "input[1].content[0].logprobs", true},
}

func TestResponsesRefusals(t *testing.T) {
	for _, tc := range responsesRefusals {
		t.Run(tc.name, func(t *testing.T) {
			if got := Neutral(tc.param); got != tc.neutral {
				t.Fatalf("Neutral(%q) = %v, want %v", tc.param, got, tc.neutral)
			}
			// Refused when the rule refuses everything, named and located.
			_, err := ResponsesToChat([]byte(tc.body), Options{Unsupported: UnsupportedRefuse})
			var te *Error
			if !errors.As(err, &te) || !errors.Is(err, ErrUntranslatable) {
				t.Fatalf("refuse: err = %v, want an ErrUntranslatable *Error", err)
			}
			if te.Param != tc.param || te.Path != tc.path {
				t.Errorf("refuse: Param %q Path %q, want %q %q", te.Param, te.Path, tc.param, tc.path)
			}
			if te.Reason == "" || !strings.Contains(err.Error(), te.Path) {
				t.Errorf("refuse: message %q names no reason or path", err)
			}

			// The default: Neutral is dropped and named, the rest refused.
			res, err := ResponsesToChat([]byte(tc.body), Options{})
			if tc.neutral {
				if err != nil {
					t.Fatalf("default: %v", err)
				}
				if !slices.Equal(res.Dropped, []string{tc.param}) {
					t.Errorf("default: Dropped %q, want [%q]", res.Dropped, tc.param)
				}
			} else if !errors.As(err, &te) || te.Param != tc.param {
				t.Errorf("default: err = %v, want a refusal of %q", err, tc.param)
			}

			// Options.Drop names it, and UnsupportedDrop drops anything:
			// both translate without it, and say so.
			for _, opts := range []Options{{Drop: []string{tc.param}, Unsupported: UnsupportedRefuse}, {Unsupported: UnsupportedDrop}} {
				res, err := ResponsesToChat([]byte(tc.body), opts)
				if err != nil {
					t.Fatalf("%+v: %v", opts, err)
				}
				if !slices.Equal(res.Dropped, []string{tc.param}) {
					t.Errorf("%+v: Dropped %q, want [%q]", opts, res.Dropped, tc.param)
				}
				var chat map[string]json.RawMessage
				if err := json.Unmarshal(res.Body, &chat); err != nil {
					t.Fatalf("body is not a JSON object: %s", res.Body)
				}
				leaf := tc.param[strings.LastIndex(tc.param, ".")+1:]
				if _, ok := chat[leaf]; ok {
					t.Errorf("%s survived the drop: %s", leaf, res.Body)
				}
				if len(chat["messages"]) == 0 {
					t.Errorf("no messages: %s", res.Body)
				}
			}
		})
	}
}

// What asks for nothing at its default is left out without a word.
func TestResponsesDefaultsAskNothing(t *testing.T) {
	for _, extra := range []string{
		`,"store":false`, `,"background":false`, `,"truncation":"disabled"`, `,"include":[]`,
		`,"metadata":{}`, `,"service_tier":"auto"`, `,"top_logprobs":0`, `,"text":{"format":{"type":"text"},"verbosity":"medium"}`,
		`,"stream":true,"stream_options":{"include_obfuscation":false}`, `,"previous_response_id":null`, `,"reasoning":{"effort":"medium","summary":null}`,
	} {
		res, err := ResponsesToChat([]byte(responsesWith(extra)), Options{Unsupported: UnsupportedRefuse})
		if err != nil {
			t.Errorf("%s: %v", extra, err)
			continue
		}
		if len(res.Dropped) > 0 {
			t.Errorf("%s: Dropped %q", extra, res.Dropped)
		}
	}
}

func TestResponsesInvalid(t *testing.T) {
	for _, tc := range []struct{ name, body, param string }{
		{"not JSON", `{"model":`, ""},
		{"no model", `{"input":"hi"}`, "model"},
		{"no input", `{"model":"m"}`, "input"},
		{"input a number", `{"model":"m","input":3}`, "input"},
		{"instructions not a string", `{"model":"m","input":"hi","instructions":["x"]}`, "instructions"},
		{"unknown role", responsesItem(`{"role":"tool","content":"x"}`), "input.role"},
		{"no content", responsesItem(`{"role":"user"}`), "input.content"},
		{"output_text from a user", responsesItem(`{"role":"user","content":[{"type":"output_text","text":"x"}]}`), "input.content.type"},
		{"input_text from the assistant", responsesItem(`{"role":"assistant","content":[{"type":"input_text","text":"x"}]}`), "input.content.type"},
		{"image without url", responsesItem(`{"role":"user","content":[{"type":"input_image","detail":"auto"}]}`), "input.content.image_url"},
		{"file without data", responsesItem(`{"role":"user","content":[{"type":"input_file","filename":"a.pdf"}]}`), "input.content.file_data"},
		{"call without call_id", responsesItem(`{"type":"function_call","name":"f","arguments":"{}"}`), "input.call_id"},
		{"call without name", responsesItem(`{"type":"function_call","call_id":"c","arguments":"{}"}`), "input.name"},
		{"call without arguments", responsesItem(`{"type":"function_call","call_id":"c","name":"f"}`), "input.arguments"},
		{"output without call_id", responsesItem(`{"type":"function_call_output","output":"x"}`), "input.call_id"},
		{"output without output", responsesItem(`{"type":"function_call_output","call_id":"c"}`), "input.output"},
		{"tool without name", responsesWith(`,"tools":[{"type":"function","parameters":{}}]`), "tools.name"},
		{"tool parameters not an object", responsesWith(`,"tools":[{"type":"function","name":"f","parameters":"x"}]`), "tools.parameters"},
		{"tool_choice unknown", responsesWith(`,"tool_choice":"sometimes"`), "tool_choice"},
		{"json_schema without schema", responsesWith(`,"text":{"format":{"type":"json_schema","name":"x"}}`), "text.format.schema"},
		{"json_schema without name", responsesWith(`,"text":{"format":{"type":"json_schema","schema":{}}}`), "text.format.name"},
		{"max_output_tokens not a number", responsesWith(`,"max_output_tokens":"many"`), "max_output_tokens"},
		{"stream not a bool", responsesWith(`,"stream":"yes"`), "stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ResponsesToChat([]byte(tc.body), Options{Unsupported: UnsupportedDrop})
			var te *Error
			if !errors.As(err, &te) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want an ErrInvalid *Error", err)
			}
			if tc.param != "" && te.Param != tc.param {
				t.Errorf("Param %q, want %q (path %s)", te.Param, tc.param, te.Path)
			}
		})
	}
}

// The cap is max_tokens for older servers, as for the other translations.
func TestResponsesLegacyMaxTokens(t *testing.T) {
	res, err := ResponsesToChat([]byte(responsesWith(`,"max_output_tokens":64`)), Options{LegacyMaxTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, res.Body, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":64}`))
}

// A translated request goes on to Anthropic as any chat request does.
func TestResponsesToChatThenAnthropic(t *testing.T) {
	for _, name := range []string{"string_input", "conversation", "function_calls", "structured", "json_object"} {
		t.Run(name, func(t *testing.T) {
			res, err := ResponsesToChat(readGolden(t, "responsesapi/requests/"+name+".in.json"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			an, err := RequestToAnthropic(res.Body, Options{Drop: []string{"*"}})
			if err != nil {
				t.Fatalf("%v\n%s", err, res.Body)
			}
			if !json.Valid(an.Body) {
				t.Fatalf("not JSON: %s", an.Body)
			}
		})
	}
}

// One answer's ids are the same every time it is translated, and the
// same answer streamed ends with the whole answer's response, ids and
// all: chunksOf cuts each golden answer into the chunks OpenAI would
// stream it in.
func TestResponsesStreamMatchesWholeAnswer(t *testing.T) {
	for _, name := range []string{"text", "tool_calls", "tool_only", "refusal", "length", "content_filter", "empty"} {
		t.Run(name, func(t *testing.T) {
			whole := readGolden(t, "responsesapi/answers/"+name+".in.json")
			a, err := ChatToResponse(whole, 1)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := ChatToResponse(whole, 1); !bytes.Equal(a, b) {
				t.Errorf("two translations differ:\n%s\n%s", a, b)
			}
			out := feedAll(t, NewStreamToResponses(StreamConfig{Created: 1}), chunksOf(t, whole))
			var final struct {
				Response json.RawMessage `json:"response"`
			}
			if err := json.Unmarshal(out[len(out)-1].Data, &final); err != nil {
				t.Fatal(err)
			}
			sameJSON(t, final.Response, a)
		})
	}
}

// chunksOf streams a chat.completion as OpenAI does: a role chunk, the
// text and refusal in two pieces each, each tool call's id and name and
// then its arguments in two pieces, the finish, the usage, [DONE].
func chunksOf(t *testing.T, whole []byte) []Event {
	t.Helper()
	var in oaResponseIn
	if err := json.Unmarshal(whole, &in); err != nil {
		t.Fatal(err)
	}
	var evs []Event
	chunk := func(delta string, finish any, usage *oaUsageIn) {
		choices := []any{}
		if delta != "" {
			choices = append(choices, map[string]any{"index": 0, "delta": json.RawMessage(delta), "finish_reason": finish})
		}
		b, err := json.Marshal(map[string]any{"id": in.ID, "object": "chat.completion.chunk", "created": in.Created, "model": in.Model, "choices": choices, "usage": usage})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, Event{Data: b})
	}
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	halves := func(s string) [2]string { return [2]string{s[:len(s)/2], s[len(s)/2:]} }
	m := in.Choices[0].Message
	chunk(`{"role":"assistant","content":""}`, nil, nil)
	for _, f := range []struct {
		key string
		v   *string
	}{{"content", m.Content}, {"refusal", m.Refusal}} {
		if f.v == nil || *f.v == "" {
			continue
		}
		for _, h := range halves(*f.v) {
			chunk(`{"`+f.key+`":`+str(h)+`}`, nil, nil)
		}
	}
	for i, tc := range m.ToolCalls {
		chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":""}}]}`, i, str(tc.ID), str(*tc.Function.Name)), nil, nil)
		for _, h := range halves(tc.Function.Arguments) {
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, str(h)), nil, nil)
		}
	}
	chunk(`{}`, in.Choices[0].FinishReason, nil)
	if in.Usage != nil {
		chunk("", nil, in.Usage)
	}
	return append(evs, Event{Data: doneData})
}

func TestChatToResponseFailures(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"not JSON", `{"choices":`},
		{"error body", `{"error":{"message":"boom","type":"server_error"}}`},
		{"no choices", `{"id":"x","choices":[]}`},
		{"two choices", `{"id":"x","choices":[{"message":{"content":"a"}},{"message":{"content":"b"}}]}`},
		{"custom tool call", `{"id":"x","choices":[{"message":{"tool_calls":[{"id":"c","type":"custom","custom":{"name":"x","input":"y"}}]},"finish_reason":"tool_calls"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ChatToResponse([]byte(tc.body), 1); !errors.Is(err, ErrResponse) {
				t.Errorf("err = %v, want ErrResponse", err)
			}
		})
	}
}

// feedResponses feeds events to a fresh translator: its output, the
// first Feed error, and Close's verdict.
func feedResponses(events []Event) ([]Event, error, error) {
	s := NewStreamToResponses(StreamConfig{Created: 1})
	var out []Event
	var feedErr error
	for _, ev := range events {
		o, err := s.Feed(ev)
		if err != nil && feedErr == nil {
			feedErr = err
		}
		out = append(out, o...)
	}
	return out, feedErr, s.Close()
}

func chunkEvents(lines ...string) []Event {
	evs := make([]Event, len(lines))
	for i, l := range lines {
		evs[i] = Event{Data: []byte(l)}
	}
	return evs
}

func TestResponsesStreamEdges(t *testing.T) {
	textEvents, _ := ParseEvents(readGolden(t, "responsesapi/streams/text.in.sse"))
	last := func(out []Event) string {
		if len(out) == 0 {
			return ""
		}
		return out[len(out)-1].Name
	}

	t.Run("cut before [DONE]", func(t *testing.T) {
		for cut := range len(textEvents) {
			out, feedErr, closeErr := feedResponses(textEvents[:cut])
			if feedErr != nil || !errors.Is(closeErr, ErrTruncated) {
				t.Fatalf("cut %d: Feed %v, Close %v; want ErrTruncated", cut, feedErr, closeErr)
			}
			for _, ev := range out {
				if ev.Name == "response.completed" || ev.Name == "response.incomplete" || ev.Name == "error" {
					t.Fatalf("cut %d: a truncated stream emitted %s", cut, ev.Name)
				}
			}
		}
	})
	t.Run("whole", func(t *testing.T) {
		out, feedErr, closeErr := feedResponses(textEvents)
		if feedErr != nil || closeErr != nil || last(out) != "response.completed" {
			t.Fatalf("Feed %v Close %v last %q", feedErr, closeErr, last(out))
		}
	})
	t.Run("nothing after the error", func(t *testing.T) {
		evs := append(slices.Clone(textEvents[:2]), chunkEvents(`{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`)...)
		evs = append(evs, textEvents[2:]...)
		out, feedErr, closeErr := feedResponses(evs)
		if feedErr != nil || !errors.Is(closeErr, ErrStreamFailed) || last(out) != "error" {
			t.Fatalf("Feed %v Close %v last %q", feedErr, closeErr, last(out))
		}
		var e struct {
			Type, Message string
			Code          *string
			Param         *string
		}
		if err := json.Unmarshal(out[len(out)-1].Data, &e); err != nil || e.Type != "error" || e.Message != "boom" || e.Code == nil || *e.Code != "server_error" || e.Param != nil {
			t.Errorf("error event %s", out[len(out)-1].Data)
		}
	})
	for _, tc := range []struct {
		name   string
		events []Event
	}{
		{"[DONE] before finish_reason", chunkEvents(`{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]}`, `[DONE]`)},
		{"[DONE] first", chunkEvents(`[DONE]`)},
		{"second choice", chunkEvents(`{"id":"c","choices":[{"index":1,"delta":{"content":"a"}}]}`)},
		{"content after finish", chunkEvents(`{"id":"c","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}`, `{"id":"c","choices":[{"index":0,"delta":{"content":"b"}}]}`)},
		{"tool call resumed", chunkEvents(
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}}]}`,
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`,
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}`)},
		{"tool call without a name", chunkEvents(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"arguments":"{}"}}]}}]}`)},
		{"not JSON", chunkEvents(`{"id":`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, feedErr, closeErr := feedResponses(tc.events)
			if !errors.Is(feedErr, ErrResponse) || !errors.Is(closeErr, ErrResponse) {
				t.Fatalf("Feed %v Close %v, want ErrResponse", feedErr, closeErr)
			}
			if n := last(out); n == "response.completed" || n == "error" {
				t.Errorf("a broken stream ended with %s", n)
			}
		})
	}
}

// Dropping a part's key keeps what the part still says.
func TestResponsesDropKeepsTheRest(t *testing.T) {
	body := responsesItem(`{"role":"user","content":[{"type":"input_image","file_id":"file_1","image_url":"https://x/y.png","detail":"low"},{"type":"input_file","file_url":"https://x/a.pdf","file_data":"data:application/pdf;base64,JVBE","filename":"a.pdf"}]}`)
	_, err := ResponsesToChat([]byte(body), Options{Drop: []string{"file_url"}})
	var te *Error
	if !errors.As(err, &te) || te.Param != "input.content.file_id" {
		t.Fatalf("err = %v, want a refusal of input.content.file_id", err)
	}
	res, err := ResponsesToChat([]byte(body), Options{Drop: []string{"file_id", "file_url"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Dropped, []string{"input.content.file_id", "input.content.file_url"}) {
		t.Errorf("Dropped %q", res.Dropped)
	}
	sameJSON(t, res.Body, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":[
		{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}},
		{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE","filename":"a.pdf"}}]}]}`))
}
