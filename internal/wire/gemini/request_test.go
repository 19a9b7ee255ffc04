package gemini

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

func TestRequest(t *testing.T) {
	cases := []struct {
		name, hub, model string
		opts             translate.Options
		path             string
		want             string // Gemini's body
		dropped          []string
	}{
		{name: "minimal", model: "gemini-2.5-flash",
			hub:  `{"model":"gemini-2.5-flash","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}`,
			path: "/models/gemini-2.5-flash:generateContent",
			want: `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"maxOutputTokens":100}}`},
		{name: "stream, escaped model, sampling", model: "tuned/m 1",
			hub:  `{"model":"x","max_tokens":5,"stream":true,"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["END"],"system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"user","content":"b"},{"role":"assistant","content":"c"}]}`,
			path: "/models/tuned%2Fm%201:streamGenerateContent?alt=sse",
			want: `{"contents":[{"role":"user","parts":[{"text":"a"},{"text":"b"}]},{"role":"model","parts":[{"text":"c"}]}],"systemInstruction":{"parts":[{"text":"Be brief."}]},
				"generationConfig":{"maxOutputTokens":5,"temperature":0.5,"topP":0.9,"topK":40,"stopSequences":["END"]}}`},
		{name: "tools and a round trip", model: "m",
			hub: `{"model":"m","max_tokens":50,"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],
				"tool_choice":{"type":"tool","name":"get_weather"},
				"messages":[{"role":"user","content":"Paris?"},
				{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_gemini_0","name":"get_weather","input":{"city":"Oslo"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"18C"},{"type":"tool_result","tool_use_id":"toolu_gemini_0","is_error":true,"content":[{"type":"text","text":"no"},{"type":"text","text":"data"}]}]}]}`,
			path: "/models/m:generateContent",
			want: `{"contents":[{"role":"user","parts":[{"text":"Paris?"}]},
				{"role":"model","parts":[{"functionCall":{"id":"toolu_1","name":"get_weather","args":{"city":"Paris"}}},{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},
				{"role":"user","parts":[{"functionResponse":{"id":"toolu_1","name":"get_weather","response":{"content":"18C"}}},{"functionResponse":{"name":"get_weather","response":{"error":"no\ndata"}}}]}],
				"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}],
				"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}},"generationConfig":{"maxOutputTokens":50}}`},
		{name: "images", model: "m",
			hub: `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},
				{"type":"image","source":{"type":"url","url":"https://example.com/cat.JPG?x=1"}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}]}]}`,
			path: "/models/m:generateContent",
			want: `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"iVBO"}},{"fileData":{"mimeType":"image/jpeg","fileUri":"https://example.com/cat.JPG?x=1"}},{"inlineData":{"mimeType":"application/pdf","data":"JVBE"}}]}],"generationConfig":{"maxOutputTokens":1}}`},
		{name: "structured output and thinking", model: "m",
			hub:  `{"model":"m","max_tokens":1000,"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}},"thinking":{"type":"enabled","budget_tokens":512},"messages":[{"role":"user","content":"x"}]}`,
			path: "/models/m:generateContent",
			want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":1000,"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"a":{"type":"integer"}}},"thinkingConfig":{"thinkingBudget":512}}}`},
		{name: "thinking disabled is left to the model; auto and none", model: "m",
			hub:  `{"model":"m","max_tokens":1,"thinking":{"type":"disabled"},"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"x"}]}`,
			path: "/models/m:generateContent",
			want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}},"generationConfig":{"maxOutputTokens":1}}`},
		{name: "neutral drops by default", model: "m",
			hub: `{"model":"m","max_tokens":1,"metadata":{"user_id":"u1"},"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],
				"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"y"}]}]}`,
			path: "/models/m:generateContent",
			want: `{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"text":"y"}]}],"systemInstruction":{"parts":[{"text":"S"}]},
				"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},"generationConfig":{"maxOutputTokens":1}}`,
			dropped: []string{"messages.content.cache_control", "messages.content.thinking", "metadata.user_id", "system.cache_control", "tool_choice.disable_parallel_tool_use"}},
		{name: "drop everything", model: "m", opts: translate.Options{Unsupported: translate.UnsupportedDrop},
			hub:     `{"model":"m","max_tokens":1,"container":"c","tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y"}},{"type":"text","text":"x"}]}]}`,
			path:    "/models/m:generateContent",
			want:    `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":1}}`,
			dropped: []string{"messages.content.source.url", "container", "tools.type"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			call, err := Codec{}.Request([]byte(c.hub), c.model, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if call.Path != c.path {
				t.Errorf("path %q, want %q", call.Path, c.path)
			}
			if call.Stream != (c.path[len(c.path)-3:] == "sse") {
				t.Errorf("stream %v", call.Stream)
			}
			assertJSON(t, call.Body, c.want)
			if !reflect.DeepEqual(call.Dropped, c.dropped) {
				t.Errorf("dropped %q, want %q", call.Dropped, c.dropped)
			}
			if r, ok := call.Reply.(Reply); !ok || r.Model != c.model {
				t.Errorf("reply %#v", call.Reply)
			}
		})
	}
}

func TestRequestRefuses(t *testing.T) {
	cases := []struct {
		name, hub, param string
		opts             translate.Options
	}{
		{"unknown key", `{"max_tokens":1,"container":"c","messages":[]}`, "container", translate.Options{}},
		{"url without a media type", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/img"}}]}]}`, "messages.content.source.url", translate.Options{}},
		{"server tool", `{"max_tokens":1,"tools":[{"type":"bash_20250124","name":"bash"}],"messages":[]}`, "tools.type", translate.Options{}},
		{"user id under refuse", `{"max_tokens":1,"metadata":{"user_id":"u"},"messages":[]}`, "metadata.user_id", translate.Options{Unsupported: translate.UnsupportedRefuse}},
		{"cache_control under refuse", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}`, "messages.content.cache_control", translate.Options{Unsupported: translate.UnsupportedRefuse}},
		{"image in a tool result", `{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]}]}]}`, "messages.content.content", translate.Options{}},
		{"text format", `{"max_tokens":1,"output_config":{"format":{"type":"text"}},"messages":[]}`, "output_config.format", translate.Options{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Codec{}.Request([]byte(c.hub), "m", c.opts)
			var te *translate.Error
			if !errors.As(err, &te) || te.Kind != translate.ErrUntranslatable || te.Param != c.param {
				t.Fatalf("err = %v, want an untranslatable %s", err, c.param)
			}
			// Options.Drop names it: dropped instead.
			c.opts.Drop = []string{c.param}
			call, err := Codec{}.Request([]byte(c.hub), "m", c.opts)
			if err != nil || len(call.Dropped) == 0 || call.Dropped[0] != c.param {
				t.Fatalf("with Drop: %v, dropped %v", err, call)
			}
		})
	}
}

func TestRequestInvalid(t *testing.T) {
	for _, hub := range []string{
		`nope`, `[]`, `{"max_tokens":1}`, `{"messages":{}}`, `{"max_tokens":"1","messages":[]}`,
		`{"messages":[{"role":"system","content":"x"}]}`, `{"messages":[{"role":"user"}]}`, `{"messages":[{"role":"user","content":5}]}`,
		`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"nowhere","content":"x"}]}]}`,
		`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":[1]}]}]}`,
		`{"messages":[],"tool_choice":{"type":"sometimes"}}`, `{"messages":[],"thinking":{"type":"enabled"}}`,
		`{"messages":[],"output_config":{"format":{"type":"json_schema"}}}`, `{"messages":[],"tools":[{"input_schema":{}}]}`,
		`{"messages":[],"system":[{"type":"image"}]}`, `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`,
	} {
		_, err := Codec{}.Request([]byte(hub), "m", translate.Options{})
		if !errors.Is(err, translate.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", hub, err)
		}
	}
}

func TestRequestBodyIsJSON(t *testing.T) {
	call, err := Codec{}.Request([]byte(`{"messages":[]}`), "m", translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if json.Unmarshal(call.Body, &m) != nil || m["contents"] == nil {
		t.Fatalf("body %s: Gemini wants contents, even empty", call.Body)
	}
}

func TestRequestGemini3SignsReplayedCalls(t *testing.T) {
	hub := `{"max_tokens":9,"messages":[{"role":"user","content":"q"},
		{"role":"assistant","content":[{"type":"text","text":"two calls"},{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1"},{"type":"tool_result","tool_use_id":"b","content":"2"}]}]}`
	for model, signed := range map[string]bool{"gemini-3-pro-preview": true, "Gemini-3.1-flash": true, "gemini-2.5-flash": false} {
		call, err := Codec{}.Request([]byte(hub), model, translate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var body gmRequest
		json.Unmarshal(call.Body, &body)
		parts := body.Contents[1].Parts
		if got := parts[1].ThoughtSignature == skipSignature; got != signed {
			t.Fatalf("%s: first call signed %v", model, got)
		}
		if parts[0].ThoughtSignature != "" || parts[2].ThoughtSignature != "" {
			t.Fatalf("%s: text or second call signed: %s", model, call.Body)
		}
	}
}
