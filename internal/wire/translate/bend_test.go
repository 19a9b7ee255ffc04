package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// field decodes one top-level key of a translated body.
func topKey(t *testing.T, body []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, body)
	}
	return m[key]
}

func compact(s string) string {
	var b bytes.Buffer
	_ = json.Compact(&b, []byte(s))
	return b.String()
}

func TestUnsupportedDefaultDropsOnlyNeutral(t *testing.T) {
	for _, tc := range refusals {
		t.Run(dirName(tc.toAnthropic)+"/"+tc.name, func(t *testing.T) {
			if Neutral(tc.param) != tc.neutral {
				t.Fatalf("Neutral(%q) = %v, the table says %v", tc.param, !tc.neutral, tc.neutral)
			}
			res, err := translateTo(tc.toAnthropic, tc.body, Options{})
			if !tc.neutral {
				var te *Error
				if !errors.As(err, &te) || !errors.Is(err, ErrUntranslatable) || te.Param != tc.param {
					t.Fatalf("err = %v, want %s refused", err, tc.param)
				}
				return
			}
			if err != nil {
				t.Fatalf("a shape-neutral parameter was refused: %v", err)
			}
			if !slices.Equal(res.Dropped, []string{tc.param}) {
				t.Errorf("Dropped = %q, want [%q]", res.Dropped, tc.param)
			}
		})
	}
}

func TestUnsupportedDropDropsAll(t *testing.T) {
	for _, tc := range refusals {
		t.Run(dirName(tc.toAnthropic)+"/"+tc.name, func(t *testing.T) {
			res, err := translateTo(tc.toAnthropic, tc.body, Options{Unsupported: UnsupportedDrop})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Dropped, []string{tc.param}) {
				t.Errorf("Dropped = %q, want [%q]", res.Dropped, tc.param)
			}
		})
	}
}

func TestParseUnsupported(t *testing.T) {
	for in, want := range map[string]Unsupported{"": UnsupportedDefault, "drop": UnsupportedDrop, "refuse": UnsupportedRefuse} {
		if got, err := ParseUnsupported(in); err != nil || got != want {
			t.Errorf("ParseUnsupported(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseUnsupported("Drop"); err == nil {
		t.Error("ParseUnsupported(Drop) accepted")
	}
}

func TestResponseFormatToAnthropic(t *testing.T) {
	schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	cases := []struct{ rf, want string }{
		{`{"type":"json_schema","json_schema":{"name":"place","strict":true,"schema":` + schema + `}}`, `{"format":{"type":"json_schema","schema":` + schema + `}}`},
		// Objects left open are closed, at every depth (closedschema.go).
		{`{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string"}}}},"c":{"anyOf":[{"$ref":"#/$defs/d"},{"type":"null"}]}},"$defs":{"d":{"type":["object","null"],"properties":{}}}}}}`,
			`{"format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":false}},"c":{"anyOf":[{"$ref":"#/$defs/d"},{"type":"null"}]}},"$defs":{"d":{"type":["object","null"],"properties":{},"additionalProperties":false}},"additionalProperties":false}}}`},
		{`{"type":"text"}`, ``},
	}
	for _, tc := range cases {
		res, err := RequestToAnthropic([]byte(openAIWith(`,"response_format":`+tc.rf)), Options{Unsupported: UnsupportedRefuse})
		if err != nil {
			t.Fatalf("%s: %v", tc.rf, err)
		}
		if got := string(topKey(t, res.Body, "output_config")); got != compact(tc.want) {
			t.Errorf("%s: output_config = %s, want %s", tc.rf, got, tc.want)
		}
		if len(res.Dropped) != 0 {
			t.Errorf("%s: Dropped = %q", tc.rf, res.Dropped)
		}
	}
	// JSON mode's "any object", and an object open in so many words,
	// are what Anthropic's structured outputs cannot hold an answer to.
	for _, open := range []struct{ rf, path string }{
		{`{"type":"json_object"}`, "response_format.type"},
		{`{"type":"json_schema","json_schema":{"name":"any"}}`, "response_format.json_schema.schema"},
		{`{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}}}`, "response_format.json_schema.schema.properties.m.additionalProperties"},
		{`{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","additionalProperties":true}}}`, "response_format.json_schema.schema.additionalProperties"},
	} {
		_, err := RequestToAnthropic([]byte(openAIWith(`,"response_format":`+open.rf)), Options{})
		var te *Error
		if !errors.As(err, &te) || te.Kind != ErrUntranslatable || te.Param != "response_format" || te.Path != open.path {
			t.Errorf("%s: err = %v, want response_format refused at %s", open.rf, err, open.path)
		}
		res, err := RequestToAnthropic([]byte(openAIWith(`,"response_format":`+open.rf)), Options{Unsupported: UnsupportedDrop})
		if err != nil || !slices.Equal(res.Dropped, []string{"response_format"}) || topKey(t, res.Body, "output_config") != nil {
			t.Errorf("%s under drop: %v, Dropped %q", open.rf, err, res.Dropped)
		}
	}
	for _, bad := range []string{`{"type":"json_schema"}`, `{"type":"json_schema","json_schema":{"name":"x","schema":[1]}}`, `"json"`} {
		_, err := RequestToAnthropic([]byte(openAIWith(`,"response_format":`+bad)), Options{Unsupported: UnsupportedDrop})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestOutputConfigToOpenAI(t *testing.T) {
	schema := `{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`
	res, err := RequestToOpenAI([]byte(anthropicWith(`,"output_config":{"format":{"type":"json_schema","schema":`+schema+`}}`)), refuseAll)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"json_schema","json_schema":{"name":"answer","schema":` + schema + `}}`
	if got := string(topKey(t, res.Body, "response_format")); got != compact(want) {
		t.Errorf("response_format = %s, want %s", got, want)
	}
	// And back: the schema comes home as it went.
	back, err := RequestToAnthropic(res.Body, refuseAll)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(topKey(t, back.Body, "output_config")); got != compact(`{"format":{"type":"json_schema","schema":`+schema+`}}`) {
		t.Errorf("round trip output_config = %s", got)
	}
	if _, err := RequestToOpenAI([]byte(anthropicWith(`,"output_config":{"format":{"type":"json_schema"}}`)), Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no schema: err = %v, want ErrInvalid", err)
	}
}

func TestReasoningEffortToThinking(t *testing.T) {
	cases := []struct {
		extra, want string
		maxTokens   string
	}{
		// No cap from the client: the default is the answer's, and the
		// budget is added to it.
		{`,"reasoning_effort":"low"`, `{"type":"enabled","budget_tokens":2048}`, "6144"},
		{`,"reasoning_effort":"medium"`, `{"type":"enabled","budget_tokens":8192}`, "12288"},
		// The client's cap covers thinking too, as OpenAI's covers
		// reasoning: the budget stays below it.
		{`,"reasoning_effort":"medium","max_tokens":5000`, `{"type":"enabled","budget_tokens":4999}`, "5000"},
		{`,"reasoning_effort":"medium","max_tokens":20000`, `{"type":"enabled","budget_tokens":8192}`, "20000"},
		{`,"reasoning_effort":"high","max_completion_tokens":32000`, `{"type":"enabled","budget_tokens":16384}`, "32000"},
		{`,"reasoning_effort":"minimal","max_tokens":1025`, `{"type":"enabled","budget_tokens":1024}`, "1025"},
		{`,"reasoning_effort":"none"`, ``, "4096"},
		{`,"reasoning_effort":"low","temperature":1`, `{"type":"enabled","budget_tokens":2048}`, "6144"},
		{`,"reasoning_effort":"low","top_p":0.95`, `{"type":"enabled","budget_tokens":2048}`, "6144"},
	}
	for _, tc := range cases {
		res, err := RequestToAnthropic([]byte(openAIWith(tc.extra)), refuseAll)
		if err != nil {
			t.Fatalf("%s: %v", tc.extra, err)
		}
		if got := string(topKey(t, res.Body, "thinking")); got != tc.want {
			t.Errorf("%s: thinking = %s, want %s", tc.extra, got, tc.want)
		}
		if got := string(topKey(t, res.Body, "max_tokens")); got != tc.maxTokens {
			t.Errorf("%s: max_tokens = %s, want %s", tc.extra, got, tc.maxTokens)
		}
	}
	tools := `,"tools":[{"type":"function","function":{"name":"f"}}]`
	for _, extra := range []string{
		`,"reasoning_effort":"low","max_tokens":1024`,
		`,"reasoning_effort":"low","temperature":0.3`,
		`,"reasoning_effort":"low","top_p":0.5`,
		tools + `,"reasoning_effort":"low","tool_choice":"required"`,
	} {
		res, err := RequestToAnthropic([]byte(openAIWith(extra)), Options{})
		if err != nil {
			t.Fatalf("%s: %v", extra, err)
		}
		if th := topKey(t, res.Body, "thinking"); th != nil || !slices.Equal(res.Dropped, []string{"reasoning_effort"}) {
			t.Errorf("%s: thinking %s, Dropped %q; want none, and reasoning_effort dropped", extra, th, res.Dropped)
		}
	}
	// An effort this package does not know has no budget: dropped and
	// named, or refused under UnsupportedRefuse.
	res, err := RequestToAnthropic([]byte(openAIWith(`,"reasoning_effort":"huge"`)), Options{})
	if err != nil || topKey(t, res.Body, "thinking") != nil || !slices.Equal(res.Dropped, []string{"reasoning_effort"}) {
		t.Errorf("unknown effort: %v, Dropped %q", err, res.Dropped)
	}
	if _, err := RequestToAnthropic([]byte(openAIWith(`,"reasoning_effort":"huge"`)), refuseAll); !errors.Is(err, ErrUntranslatable) {
		t.Errorf("unknown effort under refuse: err = %v, want ErrUntranslatable", err)
	}
}

func TestThinkingToReasoningEffort(t *testing.T) {
	cases := []struct{ thinking, want string }{
		{`{"type":"enabled","budget_tokens":1024}`, `"low"`},
		{`{"type":"enabled","budget_tokens":2048}`, `"low"`},
		{`{"type":"enabled","budget_tokens":8192}`, `"medium"`},
		{`{"type":"enabled","budget_tokens":16384}`, `"high"`},
		{`{"type":"enabled","budget_tokens":60000}`, `"high"`},
		{`{"type":"disabled"}`, ``},
	}
	for _, tc := range cases {
		res, err := RequestToOpenAI([]byte(anthropicWith(`,"thinking":`+tc.thinking)), refuseAll)
		if err != nil {
			t.Fatalf("%s: %v", tc.thinking, err)
		}
		if got := string(topKey(t, res.Body, "reasoning_effort")); got != tc.want {
			t.Errorf("%s: reasoning_effort = %s, want %s", tc.thinking, got, tc.want)
		}
	}
	if _, err := RequestToOpenAI([]byte(anthropicWith(`,"thinking":{"type":"enabled"}`)), Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no budget: err = %v, want ErrInvalid", err)
	}
	// low, medium and high come back as themselves.
	for _, effort := range []string{"low", "medium", "high"} {
		an, err := RequestToAnthropic([]byte(openAIWith(`,"reasoning_effort":"`+effort+`","max_tokens":64000`)), refuseAll)
		if err != nil {
			t.Fatal(err)
		}
		oa, err := RequestToOpenAI(an.Body, refuseAll)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(topKey(t, oa.Body, "reasoning_effort")); got != `"`+effort+`"` {
			t.Errorf("%s came back as %s", effort, got)
		}
	}
}

func TestStrictToolsCross(t *testing.T) {
	res, err := RequestToAnthropic([]byte(openAIWith(`,"tools":[{"type":"function","function":{"name":"x","strict":true,"parameters":{"type":"object","additionalProperties":false}}}]`)), refuseAll)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Body), `"strict":true`) {
		t.Errorf("strict lost going to Anthropic: %s", res.Body)
	}
	back, err := RequestToOpenAI(res.Body, refuseAll)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(back.Body), `"strict":true`) {
		t.Errorf("strict lost going to OpenAI: %s", back.Body)
	}
}

const thinkingAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[
	{"type":"thinking","thinking":"Let me see.","signature":"sig"},
	{"type":"redacted_thinking","data":"opaque"},
	{"type":"text","text":"{\"city\":\"Oslo\"}"}],
	"stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":90}}`

func TestThinkingSkippedInAnswer(t *testing.T) {
	out, err := ResponseToOpenAI([]byte(thinkingAnswer), 7)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if c := r.Choices[0].Message.Content; c == nil || *c != `{"city":"Oslo"}` {
		t.Errorf("content = %v, want the text block alone", c)
	}
	if r.Usage.CompletionTokens != 90 {
		t.Errorf("completion_tokens = %d, want 90 (thinking counted)", r.Usage.CompletionTokens)
	}
}

func TestThinkingSkippedInStream(t *testing.T) {
	lines := []string{
		anStart,
		`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me see."}}`,
		`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`,
		`content_block_stop|{"type":"content_block_stop","index":0}`,
		`content_block_start|{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"opaque"}}`,
		`content_block_stop|{"type":"content_block_stop","index":1}`,
		`content_block_start|{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
		`content_block_delta|{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Oslo"}}`,
		`content_block_stop|{"type":"content_block_stop","index":2}`,
		`message_delta|{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":90}}`,
		`message_stop|{"type":"message_stop"}`,
	}
	var events []Event
	for _, l := range lines {
		name, data, _ := strings.Cut(l, "|")
		events = append(events, Event{Name: name, Data: []byte(data)})
	}
	out := feedAll(t, NewStreamToOpenAI(StreamConfig{IncludeUsage: true}), events)
	a, err := openAIAnswer(out)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != "Oslo" || a.Stop != "stop" || !a.Terminated {
		t.Errorf("answer = %+v, want the text alone, stopped and terminated", a)
	}
	if a.Out != 90 {
		t.Errorf("completion tokens = %d, want 90 (thinking counted)", a.Out)
	}
	for _, ev := range out {
		if strings.Contains(string(ev.Data), "Let me see") || strings.Contains(string(ev.Data), "sig") {
			t.Errorf("thinking leaked: %s", ev.Data)
		}
	}
}

// A strict tool's schema is closed for Anthropic's strict tool use; one
// open in so many words is refused by default (strict is a promise
// about the answer's shape); under drop it loses strict, named, and the
// tool takes its schema as it is.
func TestStrictToolSchemaClosed(t *testing.T) {
	tool := func(params string) string {
		return `,"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":` + params + `}}]`
	}
	res, err := RequestToAnthropic([]byte(openAIWith(tool(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`))), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"f","input_schema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false},"strict":true}]`
	if got := string(topKey(t, res.Body, "tools")); got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}
	open := `{"type":"object","additionalProperties":true}`
	if _, err := RequestToAnthropic([]byte(openAIWith(tool(open))), Options{}); !errors.Is(err, ErrUntranslatable) {
		t.Errorf("by default: %v", err)
	}
	res, err = RequestToAnthropic([]byte(openAIWith(tool(open))), Options{Unsupported: UnsupportedDrop})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Dropped, []string{"tools.function.strict"}) {
		t.Errorf("open strict tool under drop: Dropped %q", res.Dropped)
	}
	if got, want := string(topKey(t, res.Body, "tools")), `[{"name":"f","input_schema":`+open+`}]`; got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}
	if _, err := RequestToAnthropic([]byte(openAIWith(tool(open))), Options{Unsupported: UnsupportedRefuse}); !errors.Is(err, ErrUntranslatable) {
		t.Errorf("under refuse: %v", err)
	}
}
