package translate

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// An OpenAI request with one extra field, as a test case writes it.
func openAIWith(extra string) string {
	return `{"model":"m","messages":[{"role":"user","content":"hi"}]` + extra + `}`
}

func anthropicWith(extra string) string {
	return `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
}

// refusals: each body is refused naming Param under UnsupportedRefuse,
// and with Drop listing that Param, translated without it. neutral says
// whether UnsupportedDefault drops it (Neutral) or refuses it.
var refusals = []struct {
	name, body, param string
	toAnthropic       bool
	neutral           bool
}{
	{"n", openAIWith(`,"n":2`), "n", true, false},
	{"logprobs", openAIWith(`,"logprobs":true`), "logprobs", true, true},
	{"top_logprobs", openAIWith(`,"top_logprobs":3`), "top_logprobs", true, true},
	{"logit_bias", openAIWith(`,"logit_bias":{"50256":-100}`), "logit_bias", true, false},
	{"presence_penalty", openAIWith(`,"presence_penalty":0.5`), "presence_penalty", true, true},
	{"frequency_penalty", openAIWith(`,"frequency_penalty":-1`), "frequency_penalty", true, true},
	{"seed", openAIWith(`,"seed":42`), "seed", true, true},
	{"response_format other", openAIWith(`,"response_format":{"type":"grammar","grammar":"x"}`), "response_format", true, false},
	{"temperature above 1", openAIWith(`,"temperature":1.2`), "temperature", true, true},
	{"modalities", openAIWith(`,"modalities":["text","audio"]`), "modalities", true, false},
	{"audio", openAIWith(`,"audio":{"voice":"alloy","format":"wav"}`), "audio", true, false},
	{"unknown parameter", openAIWith(`,"web_search_options":{}`), "web_search_options", true, false},
	{"store", openAIWith(`,"store":true`), "store", true, true},
	{"service_tier", openAIWith(`,"service_tier":"flex"`), "service_tier", true, true},
	{"openai metadata", openAIWith(`,"metadata":{"k":"v"}`), "metadata", true, true},
	{"prediction", openAIWith(`,"prediction":{"type":"content","content":"x"}`), "prediction", true, true},
	{"safety_identifier", openAIWith(`,"safety_identifier":"h"`), "safety_identifier", true, true},
	{"prompt_cache_key", openAIWith(`,"prompt_cache_key":"k"`), "prompt_cache_key", true, true},
	{"reasoning_effort, max_tokens too small", openAIWith(`,"reasoning_effort":"low","max_tokens":500`), "reasoning_effort", true, true},
	{"reasoning_effort with temperature", openAIWith(`,"reasoning_effort":"high","temperature":0.2`), "reasoning_effort", true, true},
	{"whitespace stop", openAIWith(`,"stop":["\n"]`), "stop", true, false},
	{"stream_options extra", openAIWith(`,"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}`), "stream_options.include_obfuscation", true, true},
	{"message name", `{"model":"m","messages":[{"role":"user","name":"bob","content":"hi"}]}`, "messages.name", true, true},
	{"part cache_control", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`, "messages.content.cache_control", true, true},
	{"image detail", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"high"}}]}]}`, "messages.content.image_url.detail", true, true},
	{"audio part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}]}`, "messages.content.input_audio", true, false},
	{"late system", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"system","content":"now be rude"}]}`, "messages.system", true, false},
	{"custom tool", openAIWith(`,"tools":[{"type":"custom","custom":{"name":"x"}}]`), "tools.type", true, false},
	{"function role", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"function","name":"f","content":"1"}]}`, "messages.role", true, false},

	{"top_k", anthropicWith(`,"top_k":40`), "top_k", false, true},
	{"adaptive thinking", anthropicWith(`,"thinking":{"type":"adaptive"}`), "thinking", false, true},
	{"output format other", anthropicWith(`,"output_config":{"format":{"type":"regex","pattern":"x"}}`), "output_config.format", false, false},
	{"output effort", anthropicWith(`,"output_config":{"effort":"low"}`), "output_config.effort", false, true},
	{"service_tier", anthropicWith(`,"service_tier":"standard_only"`), "service_tier", false, true},
	{"unknown parameter", anthropicWith(`,"mcp_servers":[]`), "mcp_servers", false, false},
	{"metadata key", anthropicWith(`,"metadata":{"user_id":"u","team":"t"}`), "metadata.team", false, true},
	{"system cache_control", anthropicWith(`,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]`), "system.cache_control", false, true},
	{"tool cache_control", anthropicWith(`,"tools":[{"name":"x","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]`), "tools.cache_control", false, true},
	// @ai-sdk/anthropic sends it on every streamed request with tools: it
	// changes only how a tool's input is cut into events.
	{"tool eager_input_streaming", anthropicWith(`,"tools":[{"name":"x","input_schema":{"type":"object"},"eager_input_streaming":true}]`), "tools.eager_input_streaming", false, true},
	{"server tool", anthropicWith(`,"tools":[{"type":"web_search_20250305","name":"web_search"}]`), "tools.type", false, false},
	{"document block", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}]}]}`, "messages.content.document", false, false},
	{"thinking block", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"ok"}]}]}`, "messages.content.thinking", false, true},
	{"redacted thinking block", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"redacted_thinking","data":"x"},{"type":"text","text":"ok"}]}]}`, "messages.content.redacted_thinking", false, true},
	{"tool error", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"boom","is_error":true}]}]}`, "messages.content.is_error", false, false},
	{"image in tool result", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}]}`, "messages.content.content.image", false, false},
}

func translateTo(toAnthropic bool, body string, opts Options) (*Translated, error) {
	if toAnthropic {
		return RequestToAnthropic([]byte(body), opts)
	}
	return RequestToOpenAI([]byte(body), opts)
}

var refuseAll = Options{Unsupported: UnsupportedRefuse}

func TestRefusedParamIsNamed(t *testing.T) {
	for _, tc := range refusals {
		t.Run(dirName(tc.toAnthropic)+"/"+tc.name, func(t *testing.T) {
			_, err := translateTo(tc.toAnthropic, tc.body, refuseAll)
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if !errors.Is(err, ErrUntranslatable) {
				t.Errorf("err = %v, want ErrUntranslatable", err)
			}
			if te.Param != tc.param {
				t.Errorf("Param = %q, want %q (path %s)", te.Param, tc.param, te.Path)
			}
			if !strings.Contains(err.Error(), te.Path) {
				t.Errorf("message %q does not name the path %q", err, te.Path)
			}
		})
	}
}

func TestDropRemovesAndReports(t *testing.T) {
	for _, tc := range refusals {
		t.Run(dirName(tc.toAnthropic)+"/"+tc.name, func(t *testing.T) {
			res, err := translateTo(tc.toAnthropic, tc.body, Options{Drop: []string{tc.param}, Unsupported: UnsupportedRefuse})
			if err != nil {
				t.Fatalf("with Drop: %v", err)
			}
			if !slices.Equal(res.Dropped, []string{tc.param}) {
				t.Errorf("Dropped = %q, want [%q]", res.Dropped, tc.param)
			}
			leaf := tc.param[strings.LastIndex(tc.param, ".")+1:]
			if leaf != "type" && leaf != "role" && leaf != "system" && strings.Contains(string(res.Body), `"`+leaf+`"`) {
				t.Errorf("%s survived the drop: %s", leaf, res.Body)
			}
			if !json.Valid(res.Body) {
				t.Errorf("body is not JSON: %s", res.Body)
			}
		})
	}
}

func dirName(toAnthropic bool) string {
	if toAnthropic {
		return "to_anthropic"
	}
	return "to_openai"
}

func TestDropMatching(t *testing.T) {
	body := `{"model":"m","max_tokens":1,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],"top_k":5}`
	t.Run("leaf name matches every path", func(t *testing.T) {
		res, err := RequestToOpenAI([]byte(body), Options{Drop: []string{"cache_control", "top_k"}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"top_k", "system.cache_control", "messages.content.cache_control"}
		if !slices.Equal(res.Dropped, want) {
			t.Errorf("Dropped = %q, want %q", res.Dropped, want)
		}
	})
	t.Run("full path matches only itself", func(t *testing.T) {
		_, err := RequestToOpenAI([]byte(body), Options{Drop: []string{"system.cache_control", "top_k"}, Unsupported: UnsupportedRefuse})
		var te *Error
		if !errors.As(err, &te) || te.Param != "messages.content.cache_control" {
			t.Errorf("err = %v, want a refusal of messages.content.cache_control", err)
		}
	})
	t.Run("star matches all, reported", func(t *testing.T) {
		res, err := RequestToOpenAI([]byte(body), Options{Drop: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Dropped) != 3 {
			t.Errorf("Dropped = %q, want three", res.Dropped)
		}
	})
	t.Run("a suffix inside a name does not match", func(t *testing.T) {
		_, err := RequestToOpenAI([]byte(body), Options{Drop: []string{"control", "top_k"}, Unsupported: UnsupportedRefuse})
		if !errors.Is(err, ErrUntranslatable) {
			t.Errorf("err = %v, want ErrUntranslatable", err)
		}
	})
	t.Run("repeats are reported once", func(t *testing.T) {
		res, err := RequestToAnthropic([]byte(`{"model":"m","messages":[{"role":"user","name":"a","content":"x"},{"role":"assistant","name":"b","content":"y"}]}`), Options{Drop: []string{"name"}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Dropped, []string{"messages.name"}) {
			t.Errorf("Dropped = %q", res.Dropped)
		}
	})
}

func TestInvalidIsNeverDropped(t *testing.T) {
	cases := []struct {
		name, body, param string
		toAnthropic       bool
	}{
		{"not JSON", `{"model":`, "", true},
		{"not an object", `[1]`, "", true},
		{"no model", `{"messages":[]}`, "model", true},
		{"messages not an array", `{"model":"m","messages":{}}`, "messages", true},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, "messages.role", true},
		{"arguments not JSON", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{oops"}}]}]}`, "messages.tool_calls.function.arguments", true},
		{"arguments not an object", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages.tool_calls.function.arguments", true},
		{"conflicting caps", openAIWith(`,"max_tokens":5,"max_completion_tokens":6`), "max_tokens", true},
		{"ftp image", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "messages.content.image_url.url", true},
		{"data URL not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "messages.content.image_url.url", true},
		{"temperature a string", openAIWith(`,"temperature":"hot"`), "temperature", true},
		{"no max_tokens", `{"model":"m","messages":[]}`, "max_tokens", false},
		{"system role in messages", `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"x"}]}`, "messages.role", false},
		{"bad tool_choice", anthropicWith(`,"tool_choice":{"type":"sometimes"}`), "tool_choice.type", false},
	}
	for _, tc := range cases {
		t.Run(dirName(tc.toAnthropic)+"/"+tc.name, func(t *testing.T) {
			_, err := translateTo(tc.toAnthropic, tc.body, Options{Drop: []string{"*"}})
			var te *Error
			if !errors.As(err, &te) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if te.Param != tc.param {
				t.Errorf("Param = %q, want %q", te.Param, tc.param)
			}
		})
	}
}

func TestParallelToolCalls(t *testing.T) {
	tools := `,"tools":[{"type":"function","function":{"name":"f"}}]`
	cases := []struct{ extra, want string }{
		{tools + `,"parallel_tool_calls":false`, `{"type":"auto","disable_parallel_tool_use":true}`},
		{tools + `,"parallel_tool_calls":true`, ``},
		{tools + `,"parallel_tool_calls":false,"tool_choice":"none"`, `{"type":"none"}`},
		{`,"parallel_tool_calls":false`, ``}, // no tools: nothing to run in parallel
	}
	for _, tc := range cases {
		res, err := RequestToAnthropic([]byte(openAIWith(tc.extra)), Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.extra, err)
		}
		var out struct {
			ToolChoice json.RawMessage `json:"tool_choice"`
		}
		_ = json.Unmarshal(res.Body, &out)
		if string(out.ToolChoice) != tc.want {
			t.Errorf("%s: tool_choice = %s, want %s", tc.extra, out.ToolChoice, tc.want)
		}
	}
}

func TestToolChoiceMapping(t *testing.T) {
	tools := `,"tools":[{"type":"function","function":{"name":"f"}}]`
	for _, tc := range []struct{ openai, anthropic string }{
		{`"auto"`, `{"type":"auto"}`},
		{`"none"`, `{"type":"none"}`},
		{`"required"`, `{"type":"any"}`},
		{`{"type":"function","function":{"name":"f"}}`, `{"type":"tool","name":"f"}`},
	} {
		res, err := RequestToAnthropic([]byte(openAIWith(tools+`,"tool_choice":`+tc.openai)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var an struct {
			ToolChoice json.RawMessage `json:"tool_choice"`
		}
		_ = json.Unmarshal(res.Body, &an)
		if string(an.ToolChoice) != tc.anthropic {
			t.Errorf("%s → %s, want %s", tc.openai, an.ToolChoice, tc.anthropic)
		}
		back, err := RequestToOpenAI(res.Body, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var oa struct {
			ToolChoice json.RawMessage `json:"tool_choice"`
		}
		_ = json.Unmarshal(back.Body, &oa)
		if string(oa.ToolChoice) != tc.openai {
			t.Errorf("%s → %s → %s", tc.openai, an.ToolChoice, oa.ToolChoice)
		}
	}
}

func TestMaxTokens(t *testing.T) {
	cases := []struct {
		extra string
		opts  Options
		want  int64
	}{
		{``, Options{}, DefaultMaxTokens},
		{``, Options{DefaultMaxTokens: 777}, 777},
		{`,"max_tokens":50`, Options{DefaultMaxTokens: 777}, 50},
		{`,"max_completion_tokens":60`, Options{}, 60},
		{`,"max_tokens":70,"max_completion_tokens":70`, Options{}, 70},
	}
	for _, tc := range cases {
		res, err := RequestToAnthropic([]byte(openAIWith(tc.extra)), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			MaxTokens int64 `json:"max_tokens"`
		}
		_ = json.Unmarshal(res.Body, &out)
		if out.MaxTokens != tc.want {
			t.Errorf("%q %+v: max_tokens %d, want %d", tc.extra, tc.opts, out.MaxTokens, tc.want)
		}
	}
	res, err := RequestToOpenAI([]byte(anthropicWith("")), Options{LegacyMaxTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Body), `"max_tokens":10`) || strings.Contains(string(res.Body), "max_completion_tokens") {
		t.Errorf("LegacyMaxTokens: %s", res.Body)
	}
}

func TestStreamFlags(t *testing.T) {
	res, err := RequestToAnthropic([]byte(openAIWith(`,"stream":true,"stream_options":{"include_usage":true}`)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stream || !res.IncludeUsage {
		t.Errorf("Stream %v IncludeUsage %v, want both", res.Stream, res.IncludeUsage)
	}
	res, err = RequestToOpenAI([]byte(anthropicWith(`,"stream":true`)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stream || !strings.Contains(string(res.Body), `"stream_options":{"include_usage":true}`) {
		t.Errorf("an Anthropic stream must ask OpenAI for usage: %s", res.Body)
	}
}
