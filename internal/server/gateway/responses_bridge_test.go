package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// bridgeStack is the default stack with three more models: mock-chat, on
// an OpenAI-kind provider without the Responses API; mock-mixed, an
// Anthropic target then one that serves it; mock-down, a target that
// refuses connections then an Anthropic one.
func bridgeStack(t *testing.T) *stack {
	off := false
	return newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 5, Max: 5}}, func(c *config.Config) {
		base := c.Providers[0].BaseURL
		c.Providers = append(c.Providers,
			config.Provider{Name: "chat-only", Kind: config.KindOpenAI, BaseURL: base, Responses: &off,
				Timeout: config.Duration(config.DefaultProviderTimeout), ForwardHeaders: []string{"X-Mock-Encoding"}},
			config.Provider{Name: "down", Kind: config.KindOpenAI, BaseURL: "http://127.0.0.1:1/v1", Responses: &off,
				Timeout: config.Duration(config.DefaultProviderTimeout)})
		c.Models = append(c.Models,
			config.Model{Name: "mock-chat", Targets: []config.Target{{Provider: "chat-only", Model: "gpt-x"}}},
			config.Model{Name: "mock-mixed", Targets: []config.Target{{Provider: "mock-anthropic", Model: "claude-x"}, {Provider: "mock-openai", Model: "gpt-x"}}},
			config.Model{Name: "mock-down", Targets: []config.Target{{Provider: "down", Model: "gpt-x"}, {Provider: "mock-anthropic", Model: "claude-x"}}})
	})
}

// bridgedModels are the models whose Responses API requests are bridged,
// with the path their provider is called on.
var bridgedModels = []struct{ model, path string }{
	{"mock-claude", "/v1/messages"},
	{"mock-chat", "/v1/chat/completions"},
	{"mock-mixed", "/v1/messages"},
	{"mock-down", "/v1/messages"},
}

func responsesClient(s *stack, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(s.url + "/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0)}, opts...)...)
}

// readResponses reads a Responses API stream with the official SDK: the
// text of its deltas, the response its last event carries, and the
// event types in order.
func readResponses(t *testing.T, s *ssestream.Stream[responses.ResponseStreamEventUnion]) (text string, final responses.Response, types []string) {
	t.Helper()
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed", "response.incomplete":
			final = ev.Response
		case "error":
			t.Fatalf("error event: %s", ev.RawJSON())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return text, final, types
}

// A Responses API request for a model with no target that serves the
// API is served through chat completions, whole and streamed, by every
// kind of target, and read by the official SDK as the API's own.
func TestResponsesBridgedWholeAndStreamed(t *testing.T) {
	s := bridgeStack(t)
	c := responsesClient(s)
	for _, bm := range bridgedModels {
		t.Run(bm.model, func(t *testing.T) {
			p := responses.ResponseNewParams{Model: bm.model, Instructions: openai.String("Be brief."),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}
			var raw *http.Response
			r, err := c.Responses.New(t.Context(), p, option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if r.Object != "response" || r.Status != "completed" || r.OutputText() == "" || r.Usage.OutputTokens != 5 || r.Usage.InputTokens == 0 || r.Model == "" {
				t.Errorf("whole: %s", r.RawJSON())
			}
			if got := s.mock.LastRequest().Path; got != bm.path {
				t.Errorf("provider called on %s, want %s", got, bm.path)
			}
			if raw.Header.Get("Content-Length") != "" && raw.ContentLength != int64(len(r.RawJSON())) {
				t.Errorf("Content-Length %d for a %d-byte answer", raw.ContentLength, len(r.RawJSON()))
			}

			text, final, types := readResponses(t, c.Responses.NewStreaming(t.Context(), p))
			if text == "" || final.OutputText() != text || final.Status != "completed" || final.Usage.OutputTokens != 5 {
				t.Errorf("stream: deltas %q, final %s", text, final.RawJSON())
			}
			if len(types) < 4 || types[0] != "response.created" || types[len(types)-1] != "response.completed" {
				t.Errorf("stream events %v", types)
			}
		})
	}
	s.waitLog(t, "endpoint=responses", "model=mock-claude", "stream=true", "outcome=ok")
	if n := s.counter("sluice_requests_total", "endpoint", "responses", "model", "mock-claude"); n != 2 {
		t.Errorf("sluice_requests_total{endpoint=responses, model=mock-claude} = %v, want 2", n)
	}
}

// A function tool is called, and answered with its output, across the
// bridge: the call is a function_call item, whole and streamed, and the
// next request's function_call_output reaches the target as the tool's
// result.
func TestResponsesBridgedToolRoundTrip(t *testing.T) {
	s := bridgeStack(t)
	c := responsesClient(s)
	tool := responses.ToolParamOfFunction("get_weather", map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
	}, false)
	for _, model := range []string{"mock-claude", "mock-chat"} {
		t.Run(model, func(t *testing.T) {
			ask := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("What is the weather in Paris?", responses.EasyInputMessageRoleUser)}
			p := responses.ResponseNewParams{Model: model, Tools: []responses.ToolUnionParam{tool},
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: ask}}

			// Streamed: the call's arguments arrive as deltas and whole.
			st := c.Responses.NewStreaming(t.Context(), p)
			var args string
			var final responses.Response
			for st.Next() {
				switch ev := st.Current(); ev.Type {
				case "response.function_call_arguments.done":
					args = ev.Arguments
				case "response.completed":
					final = ev.Response
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			last := final.Output[len(final.Output)-1]
			if args == "" || last.Type != "function_call" || last.Arguments.OfString != args {
				t.Fatalf("streamed call: arguments %q, final %s", args, final.RawJSON())
			}

			r, err := c.Responses.New(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			var call responses.ResponseOutputItemUnion
			for _, o := range r.Output {
				if o.Type == "function_call" {
					call = o
				}
			}
			var in map[string]any
			if call.Name != "get_weather" || call.CallID == "" || json.Unmarshal([]byte(call.Arguments.OfString), &in) != nil || in["city"] == nil {
				t.Fatalf("whole call: %s", r.RawJSON())
			}
			ask = append(ask, responses.ResponseInputItemParamOfFunctionCall(call.Arguments.OfString, call.CallID, call.Name),
				responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(call.CallID),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny, 21C")}}})
			p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: ask}
			r, err = c.Responses.New(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.OutputText(), "tool result: sunny, 21C") {
				t.Errorf("answer to the tool's output: %s", r.RawJSON())
			}
		})
	}
}

// text.format's JSON schema crosses the bridge as response_format: the
// answer is JSON that meets it, checked by the gateway too.
func TestResponsesBridgedStructuredOutput(t *testing.T) {
	s := bridgeStack(t)
	schema := `{"type":"object","properties":{"title":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"mood":{"type":"string","enum":["calm","busy"]}},"required":["title","tags","mood"],"additionalProperties":false}`
	for _, stream := range []bool{false, true} {
		body := `{"model":"mock-claude","input":"describe the day","stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"text":{"format":{"type":"json_schema","name":"day","strict":true,"schema":` + schema + `}}}`
		resp, err := s.post(t.Context(), "/v1/responses", body, nil)
		if err != nil {
			t.Fatal(err)
		}
		var text string
		if stream {
			err = sseEvents(resp.Body, func(d string) bool {
				var ev struct{ Type, Text string }
				json.Unmarshal([]byte(d), &ev)
				if ev.Type == "response.output_text.done" {
					text = ev.Text
				}
				return true
			})
		} else {
			var r responses.Response
			err = json.NewDecoder(resp.Body).Decode(&r)
			text = r.OutputText()
		}
		resp.Body.Close()
		var day struct {
			Title string
			Tags  []string
			Mood  string
		}
		if err != nil || json.Unmarshal([]byte(text), &day) != nil || day.Tags == nil || (day.Mood != "calm" && day.Mood != "busy") {
			t.Errorf("stream %v: %v, text %q", stream, err, text)
		}
		if v := resp.Trailer.Get("X-Sluice-Validation") + resp.Header.Get("X-Sluice-Validation"); v != "valid" {
			t.Errorf("stream %v: X-Sluice-Validation %q, want valid", stream, v)
		}
	}
}

// What the bridge drops is named in X-Sluice-Dropped, ahead of what the
// translation to Anthropic dropped; what it cannot carry goes to a
// target that serves the API natively, or is refused naming it.
func TestResponsesBridgeDropsAndRefuses(t *testing.T) {
	s := bridgeStack(t)
	status, hdr, body := s.do("/v1/responses", `{"model":"mock-claude","input":"hi","store":true,"service_tier":"flex"}`, nil)
	if status != 200 || !strings.Contains(hdr.Get("X-Sluice-Dropped"), "store") || !strings.Contains(hdr.Get("X-Sluice-Dropped"), "service_tier") {
		t.Errorf("dropped: %d %q %s", status, hdr.Get("X-Sluice-Dropped"), body)
	}

	stateful := `{"model":"%s","input":"and then?","previous_response_id":"resp_123"}`
	// A mixed model: the target that serves the API takes it as it is.
	status, _, body = s.do("/v1/responses", strings.Replace(stateful, "%s", "mock-mixed", 1), nil)
	if last := s.mock.LastRequest(); status != 200 || last.Path != "/v1/responses" || !strings.Contains(string(last.Body), "previous_response_id") {
		t.Errorf("mixed model: %d %s, provider called on %s", status, body, last.Path)
	}
	for _, c := range []struct{ body, param string }{
		{strings.Replace(stateful, "%s", "mock-claude", 1), "previous_response_id"},
		{`{"model":"mock-chat","input":"news?","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{`{"model":"mock-claude","input":"hi","background":true}`, "background"},
	} {
		calls := s.mock.Stats().Total
		status, _, body := s.do("/v1/responses", c.body, nil)
		if status != 400 || errorParam(t, body) != c.param || !strings.Contains(string(body), "natively") {
			t.Errorf("%s: want a 400 naming %s, got %d %s", c.body, c.param, status, body)
		}
		if s.mock.Stats().Total != calls {
			t.Errorf("%s: a refused request reached the provider", c.body)
		}
	}
}

// A bridged stream broken mid-answer is continued on the next target,
// and the client reads one Responses API stream with the whole text.
func TestResponsesBridgedContinuation(t *testing.T) {
	srv, p, f := contGateway(t, contSetup{how: breakCut, fallbackAnthropic: true, fallbackMode: "prefill"})
	c := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	st := c.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{Model: "m",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("count")}})
	text, final, _ := readResponses(t, st)
	if text != wordsText(0, contWords) || final.OutputText() != text {
		t.Fatalf("text %q, final %q", text, final.OutputText())
	}
	if final.Status != "incomplete" || final.IncompleteDetails.Reason != "max_output_tokens" || final.Usage.OutputTokens != 60 {
		t.Errorf("final %s", final.RawJSON())
	}
	if p.calls() != 1 || f.calls() != 1 {
		t.Errorf("primary %d calls, fallback %d; want 1 and 1", p.calls(), f.calls())
	}
}

// A client that keeps its conversation as stored items (the AI SDK's
// default Responses provider) refers to the bridge's earlier answers by
// id: Sluice kept them, and the target reads them as the conversation.
// With store: false nothing is kept, and a reference is refused, naming
// it.
func TestResponsesBridgeItemReferences(t *testing.T) {
	s := bridgeStack(t)
	for _, stream := range []bool{false, true} {
		first := `{"model":"mock-claude","input":"What is the weather in Paris?","stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`
		var out []itemHead
		resp, err := s.post(t.Context(), "/v1/responses", first, nil)
		if err != nil {
			t.Fatal(err)
		}
		if stream {
			err = sseEvents(resp.Body, func(d string) bool {
				var ev struct {
					Type     string
					Response struct{ Output []itemHead }
				}
				json.Unmarshal([]byte(d), &ev)
				if ev.Type == "response.completed" {
					for _, o := range ev.Response.Output {
						out = append(out, o)
					}
				}
				return true
			})
		} else {
			var r struct{ Output []itemHead }
			err = json.NewDecoder(resp.Body).Decode(&r)
			out = r.Output
		}
		resp.Body.Close()
		var refs []string
		callID := ""
		for _, o := range out {
			refs = append(refs, `{"type":"item_reference","id":"`+o.ID+`"}`)
			if o.Type == "function_call" {
				callID = o.CallID
			}
		}
		if err != nil || callID == "" {
			t.Fatalf("stream %v: first turn %v, items %+v", stream, err, out)
		}
		second := `{"model":"mock-claude","input":[{"role":"user","content":"What is the weather in Paris?"},` + strings.Join(refs, ",") +
			`,{"type":"function_call_output","call_id":"` + callID + `","output":"sunny, 21C"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
		status, _, body := s.do("/v1/responses", second, nil)
		if status != 200 || !strings.Contains(string(body), "tool result: sunny, 21C") {
			t.Fatalf("stream %v: second turn by reference: %d %s", stream, status, body)
		}
		last := s.mock.LastRequest()
		if !strings.Contains(string(last.Body), `"tool_use"`) || !strings.Contains(string(last.Body), callID) {
			t.Errorf("the target did not read the referred call: %s", last.Body)
		}
	}

	// store: false: nothing is kept.
	status, _, body := s.do("/v1/responses", `{"model":"mock-claude","input":"hello","store":false}`, nil)
	var r struct{ Output []struct{ ID string } }
	if status != 200 || json.Unmarshal(body, &r) != nil || len(r.Output) == 0 {
		t.Fatalf("store false: %d %s", status, body)
	}
	status, _, body = s.do("/v1/responses", `{"model":"mock-claude","input":[{"type":"item_reference","id":"`+r.Output[0].ID+`"},{"role":"user","content":"again"}]}`, nil)
	if status != 400 || errorParam(t, body) != "input[0]" || !strings.Contains(string(body), "send the item itself") {
		t.Errorf("a reference to an item not kept: %d %s", status, body)
	}
}

// itemHead is what a test reads of an output item.
type itemHead struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	CallID string `json:"call_id"`
}
