package bedrock

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

const claude = "us.anthropic.claude-sonnet-4-20250514-v1:0"
const nova = "amazon.nova-pro-v1:0"

func request(t *testing.T, hub, model string, opts translate.Options) (map[string]any, *translateCall) {
	t.Helper()
	call, err := Kind().Codec.Request([]byte(hub), model, opts)
	if err != nil {
		t.Fatalf("Request: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(call.Body, &body); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, call.Body)
	}
	return body, &translateCall{Path: call.Path, Stream: call.Stream, Dropped: call.Dropped}
}

type translateCall struct {
	Path    string
	Stream  bool
	Dropped []string
}

func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

func TestRequestMapsTheHub(t *testing.T) {
	hub := `{"model":"m","max_tokens":300,"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["END"],
	"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],
	"metadata":{"user_id":"u-1"},
	"messages":[
	 {"role":"user","content":[{"type":"text","text":"What is in this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
	 {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"tool_use","id":"tu_1","name":"look","input":{"q":"x"}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"a cat","is_error":true}]}],
	"tools":[{"name":"look","description":"Look.","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}],
	"tool_choice":{"type":"any"},
	"thinking":{"type":"enabled","budget_tokens":1024}}`
	body, call := request(t, hub, claude, translate.Options{})
	if call.Path != "/model/us.anthropic.claude-sonnet-4-20250514-v1:0/converse" || call.Stream {
		t.Errorf("path %q stream %v", call.Path, call.Stream)
	}
	if !slices.Equal(call.Dropped, []string{"system.cache_control", "metadata.user_id"}) {
		t.Errorf("dropped %v", call.Dropped)
	}
	want := jsonOf(t, `{
	"messages":[
	 {"role":"user","content":[{"text":"What is in this?"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}]},
	 {"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig"}}},{"toolUse":{"toolUseId":"tu_1","name":"look","input":{"q":"x"}}}]},
	 {"role":"user","content":[{"toolResult":{"toolUseId":"tu_1","content":[{"text":"a cat"}],"status":"error"}}]}],
	"system":[{"text":"Be brief."}],
	"inferenceConfig":{"maxTokens":300,"temperature":0.5,"topP":0.9,"stopSequences":["END"]},
	"toolConfig":{"tools":[{"toolSpec":{"name":"look","description":"Look.","inputSchema":{"json":{"type":"object","properties":{"q":{"type":"string"}}}}}}],"toolChoice":{"any":{}}},
	"additionalModelRequestFields":{"top_k":40,"thinking":{"type":"enabled","budget_tokens":1024}}}`)
	if !reflect.DeepEqual(body, want) {
		got, _ := json.Marshal(body)
		t.Fatalf("body\n%s", got)
	}
}

func TestRequestPathEscapesTheModelAndStreams(t *testing.T) {
	arn := "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0"
	_, call := request(t, `{"model":"x","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, arn, translate.Options{})
	want := "/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile%2Fus.anthropic.claude-3-5-haiku-20241022-v1:0/converse-stream"
	if call.Path != want || !call.Stream {
		t.Fatalf("path %q stream %v", call.Path, call.Stream)
	}
	model, stream, ok := Kind().Server.Match(want, "")
	if !ok || !stream || model != arn {
		t.Fatalf("Match read %q %v %v", model, stream, ok)
	}
}

func TestRequestBendsForOtherFamilies(t *testing.T) {
	hub := `{"model":"x","max_tokens":5,"top_k":3,"thinking":{"type":"enabled","budget_tokens":2000},
	"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"yo"}]},{"role":"user","content":"again"}]}`
	body, call := request(t, hub, nova, translate.Options{})
	if _, ok := body["additionalModelRequestFields"]; ok {
		t.Errorf("additional fields sent to nova: %v", body)
	}
	if !slices.Equal(call.Dropped, []string{"messages.content.thinking", "top_k", "thinking"}) {
		t.Errorf("dropped %v", call.Dropped)
	}
	assistant := body["messages"].([]any)[1].(map[string]any)["content"].([]any)
	if len(assistant) != 1 {
		t.Errorf("assistant content %v", assistant)
	}
	// Refused when on_unsupported says so.
	_, err := Kind().Codec.Request([]byte(hub), nova, translate.Options{Unsupported: translate.UnsupportedRefuse})
	var te *translate.Error
	if !errors.As(err, &te) || !errors.Is(err, translate.ErrUntranslatable) {
		t.Fatalf("refuse: %v", err)
	}
}

func TestRequestRefusesWhatChangesTheShape(t *testing.T) {
	for name, hub := range map[string]string{
		"url image":    `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}`,
		"unknown key":  `{"max_tokens":5,"service_tier":"auto","messages":[{"role":"user","content":"hi"}]}`,
		"server tool":  `{"max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"hi"}]}`,
		"format+tools": `{"max_tokens":5,"tools":[{"name":"a","input_schema":{"type":"object"}}],"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"messages":[{"role":"user","content":"hi"}]}`,
		"document":     `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}]}]}`,
		"none+history": `{"max_tokens":5,"tools":[{"name":"a","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}]}`,
		"block key":    `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x","citations":[]}]}]}`,
	} {
		_, err := Kind().Codec.Request([]byte(hub), claude, translate.Options{})
		var te *translate.Error
		if !errors.As(err, &te) || te.Kind != translate.ErrUntranslatable {
			t.Errorf("%s: %v, want a refusal", name, err)
			continue
		}
		// The same request passes when the parameter may be dropped.
		if _, err := Kind().Codec.Request([]byte(hub), claude, translate.Options{Drop: []string{te.Param}}); err != nil {
			t.Errorf("%s: with %q dropped: %v", name, te.Param, err)
		}
	}
}

func TestRequestThinkingGivesWayToAStructuredAnswer(t *testing.T) {
	body, call := request(t, `{"max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":2000},"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"messages":[{"role":"user","content":"hi"}]}`, claude, translate.Options{})
	if _, ok := body["additionalModelRequestFields"]; ok || !slices.Equal(call.Dropped, []string{"thinking"}) {
		t.Fatalf("additional %v dropped %v", body["additionalModelRequestFields"], call.Dropped)
	}
}

func TestRequestToolResultStatusOnlyWhereTaken(t *testing.T) {
	hub := `{"max_tokens":5,"tools":[{"name":"a","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"bad","is_error":true}]}]}`
	for model, status := range map[string]string{claude: "error", nova: "error", "meta.llama3-3-70b-instruct-v1:0": ""} {
		body, call := request(t, hub, model, translate.Options{})
		res := body["messages"].([]any)[2].(map[string]any)["content"].([]any)[0].(map[string]any)["toolResult"].(map[string]any)
		got, _ := res["status"].(string)
		if got != status || (status == "") != slices.Equal(call.Dropped, []string{"messages.content.is_error"}) {
			t.Errorf("%s: status %q dropped %v", model, got, call.Dropped)
		}
	}
}

func TestRequestToolChoiceNoneHidesTheTools(t *testing.T) {
	body, call := request(t, `{"max_tokens":5,"tools":[{"name":"a","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"hi"}]}`, nova, translate.Options{})
	if _, ok := body["toolConfig"]; ok || len(call.Dropped) != 0 {
		t.Fatalf("toolConfig %v dropped %v", body["toolConfig"], call.Dropped)
	}
}

func TestRequestForcesAToolForAJSONSchema(t *testing.T) {
	body, _ := request(t, `{"max_tokens":50,"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},"messages":[{"role":"user","content":"Where?"}]}`, nova, translate.Options{})
	want := jsonOf(t, `{"tools":[{"toolSpec":{"name":"sluice_json_answer","description":"Give the answer: this tool's input is the whole answer, as JSON matching its schema.","inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}}],"toolChoice":{"tool":{"name":"sluice_json_answer"}}}`)
	if !reflect.DeepEqual(body["toolConfig"], want) {
		got, _ := json.Marshal(body["toolConfig"])
		t.Fatalf("toolConfig %s", got)
	}
}

func TestRequestInvalid(t *testing.T) {
	for name, hub := range map[string]string{
		"not json":      `{`,
		"not object":    `[1]`,
		"no messages":   `{"max_tokens":5}`,
		"bad role":      `{"max_tokens":5,"messages":[{"role":"system","content":"x"}]}`,
		"bad content":   `{"max_tokens":5,"messages":[{"role":"user","content":5}]}`,
		"bad max":       `{"max_tokens":"5","messages":[{"role":"user","content":"x"}]}`,
		"bad media":     `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"x"}}]}]}`,
		"tool input":    `{"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":[1]}]}]}`,
		"choice":        `{"max_tokens":5,"tool_choice":{"type":"sometimes"},"messages":[{"role":"user","content":"x"}]}`,
		"format type":   `{"max_tokens":5,"output_config":{"format":{"type":"xml"}},"messages":[{"role":"user","content":"x"}]}`,
		"thinking type": `{"max_tokens":5,"thinking":{"type":"maybe"},"messages":[{"role":"user","content":"x"}]}`,
	} {
		_, err := Kind().Codec.Request([]byte(hub), claude, translate.Options{Unsupported: translate.UnsupportedDrop})
		if !errors.Is(err, translate.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
