package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		path, model string
		stream, ok  bool
	}{
		{"/v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", false, true},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", "gemini-2.5-flash", true, true},
		{"/v1/models/gemini-2.5-pro:generateContent", "gemini-2.5-pro", false, true},
		{"/mock/gemini/v1beta/models/m%201:generateContent", "m 1", false, true},
		{"/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent", "gemini-2.5-pro", true, true},
		{"/v1beta/models/m%3AgenerateContent", "m", false, true},
		{"/v1beta/models/m:countTokens", "", false, false},
		{"/v1beta/models/m", "", false, false},
		{"/v1beta/models/:generateContent", "", false, false},
		{"/v1/messages", "", false, false},
		{"/other/models/m:generateContent", "", false, false},
		{"/v1beta/models/a/b:generateContent", "", false, false},
	}
	for _, c := range cases {
		m, s, ok := Server{}.Match(c.path, "alt=sse")
		if m != c.model || s != c.stream || ok != c.ok {
			t.Errorf("Match(%q) = %q %v %v, want %q %v %v", c.path, m, s, ok, c.model, c.stream, c.ok)
		}
	}
}

func TestHubRequest(t *testing.T) {
	gm := `{"contents":[{"role":"user","parts":[{"text":"What is the weather?"}]},
		{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp":18}}}]}],
		"systemInstruction":{"parts":[{"text":"A"},{"text":"B"}]},
		"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}}}}]}],
		"toolConfig":{"functionCallingConfig":{"mode":"ANY"}},
		"generationConfig":{"maxOutputTokens":64,"temperature":1.5,"topK":20,"responseMimeType":"application/json","responseSchema":{"type":"OBJECT"},"thinkingConfig":{"thinkingBudget":0}}}`
	got, err := Server{}.HubRequest("gemini-2.5-flash", true, []byte(gm))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, got, `{"model":"gemini-2.5-flash","max_tokens":64,"system":"A\nB","stream":true,"temperature":1.5,"top_k":20,
		"messages":[{"role":"user","content":[{"type":"text","text":"What is the weather?"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_gemini_0","name":"get_weather","input":{"city":"Paris"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_gemini_0","content":"{\"temp\":18}"}]}],
		"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
		"tool_choice":{"type":"any"},"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"thinking":{"type":"disabled"}}`)
	for _, bad := range []string{`nope`, `{}`, `{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`,
		`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`} {
		if _, err := (Server{}).HubRequest("m", false, []byte(bad)); err == nil {
			t.Errorf("HubRequest(%s) accepted it", bad)
		}
	}
}

// TestRoundTrip: hub → Gemini (Codec) → hub (Server.HubRequest) keeps
// what the hub request meant.
func TestRoundTrip(t *testing.T) {
	hub := `{"model":"gemini-2.5-flash","max_tokens":300,"stream":true,"system":"Be exact.","temperature":0.2,"top_p":0.8,"top_k":10,"stop_sequences":["X"],
		"tools":[{"name":"lookup","description":"Looks up","input_schema":{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false}}],
		"tool_choice":{"type":"tool","name":"lookup"},
		"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}}},
		"thinking":{"type":"enabled","budget_tokens":1024},
		"messages":[{"role":"user","content":[{"type":"text","text":"q1"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]},
		{"role":"assistant","content":[{"type":"text","text":"calling"},{"type":"tool_use","id":"toolu_9","name":"lookup","input":{"q":"x"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"found"},{"type":"text","text":"and?"}]}]}`
	call, err := Codec{}.Request([]byte(hub), "gemini-2.5-flash", translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model, stream, ok := Server{}.Match("/v1beta"+strings.SplitN(call.Path, "?", 2)[0], "alt=sse")
	if !ok || !stream || model != "gemini-2.5-flash" {
		t.Fatalf("Match(%s) = %q %v %v", call.Path, model, stream, ok)
	}
	back, err := Server{}.HubRequest(model, stream, call.Body)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, back, `{"model":"gemini-2.5-flash","max_tokens":300,"stream":true,"system":"Be exact.","temperature":0.2,"top_p":0.8,"top_k":10,"stop_sequences":["X"],
		"tools":[{"name":"lookup","description":"Looks up","input_schema":{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false}}],
		"tool_choice":{"type":"tool","name":"lookup"},
		"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}}},
		"thinking":{"type":"enabled","budget_tokens":1024},
		"messages":[{"role":"user","content":[{"type":"text","text":"q1"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]},
		{"role":"assistant","content":[{"type":"text","text":"calling"},{"type":"tool_use","id":"toolu_9","name":"lookup","input":{"q":"x"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"found"},{"type":"text","text":"and?"}]}]}`)
}

func TestServerAnswerRoundTrip(t *testing.T) {
	hub := `{"id":"msg_01X","type":"message","role":"assistant","model":"gemini-2.5-flash","content":[{"type":"text","text":"Sure."},
		{"type":"tool_use","id":"toolu_5","name":"f","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":7}}`
	gm, err := Server{}.Answer([]byte(hub))
	if err != nil {
		t.Fatal(err)
	}
	back, err := Reply{Model: "x"}.Answer(gm)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, back, hub)
	for stop, finish := range map[string]string{"max_tokens": "MAX_TOKENS", "refusal": "SAFETY", "end_turn": "STOP", "stop_sequence": "STOP"} {
		gm, _ := Server{}.Answer([]byte(`{"id":"msg_1","content":[],"stop_reason":"` + stop + `"}`))
		if !bytes.Contains(gm, []byte(`"finishReason":"`+finish+`"`)) {
			t.Errorf("%s: %s", stop, gm)
		}
	}
}

// hubSSE is an Anthropic stream as the mock's handler writes it.
const hubSSE = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_7\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"gemini-2.5-flash\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":21,\"cache_read_input_tokens\":3,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" there\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_3\",\"name\":\"f\",\"input\":{}}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// serve writes hub into a Server stream one byte at a time.
func serve(t testing.TB, hub string) string {
	var out bytes.Buffer
	w := Server{}.Stream(&out)
	for i := range len(hub) {
		if _, err := w.Write([]byte{hub[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestServerStream(t *testing.T) {
	gm := serve(t, hubSSE)
	chunks := strings.Split(strings.TrimSuffix(gm, "\r\n\r\n"), "\r\n\r\n")
	if len(chunks) != 4 {
		t.Fatalf("%d chunks, want 4 (two texts, one call, the end):\n%s", len(chunks), gm)
	}
	var last gmResponse
	if err := json.Unmarshal([]byte(strings.TrimPrefix(chunks[3], "data: ")), &last); err != nil {
		t.Fatal(err)
	}
	if last.Candidates[0].FinishReason != "STOP" || *last.UsageMetadata.PromptTokenCount != 24 || *last.UsageMetadata.CandidatesTokenCount != 15 ||
		*last.UsageMetadata.CachedContentTokenCount != 3 || last.ResponseID != "7" {
		t.Fatalf("last chunk %s", chunks[3])
	}
	if !strings.Contains(chunks[2], `"functionCall":{"id":"toolu_3","name":"f","args":{"a":1}}`) {
		t.Fatalf("call chunk %s", chunks[2])
	}
	// And back through the codec: the hub stream means the same.
	back, err := hubStream(gm, true)
	if err != io.EOF {
		t.Fatal(err)
	}
	v, out, in := checkHub(t, back)
	if v != protocol.StreamOK || out != 15 || in != 24 {
		t.Fatalf("verdict %q out %d in %d", v, out, in)
	}
	evs := hubEvents(t, back)
	var text, args string
	for _, e := range evs {
		if d, ok := e["delta"].(map[string]any); ok {
			if s, ok := d["text"].(string); ok {
				text += s
			}
			if s, ok := d["partial_json"].(string); ok {
				args += s
			}
		}
	}
	if text != "Hello there" || args != `{"a":1}` || evs[0]["message"].(map[string]any)["id"] != "msg_7" {
		t.Fatalf("text %q args %q start %v", text, args, evs[0])
	}
	if evs[len(evs)-2]["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Fatal("stop reason lost")
	}
}

func TestServerStreamCutAndError(t *testing.T) {
	// Cut before message_stop: nothing past the last delta, no finish.
	cut := hubSSE[:strings.Index(hubSSE, "event: message_stop")]
	gm := serve(t, cut)
	if strings.Contains(gm, "finishReason") {
		t.Fatalf("a cut hub stream got a finishReason:\n%s", gm)
	}
	if _, err := hubStream(gm, false); !errors.Is(err, translate.ErrTruncated) {
		t.Fatalf("codec reads the cut stream as %v", err)
	}
	// An error event: a Gemini error chunk, then nothing.
	errSSE := hubSSE[:strings.Index(hubSSE, "event: content_block_stop")] +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"late\"}}\n\n"
	gm = serve(t, errSSE)
	if !strings.HasSuffix(gm, `data: {"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}`+"\r\n\r\n") || strings.Contains(gm, "late") {
		t.Fatalf("error stream:\n%s", gm)
	}
	back, err := hubStream(gm, true)
	if !errors.Is(err, translate.ErrStreamFailed) || !strings.Contains(string(back), `"type":"overloaded_error"`) {
		t.Fatalf("codec: %v %s", err, back)
	}
}

func TestKind(t *testing.T) {
	k := Kind()
	if k.Name != "gemini" || k.Codec == nil || k.Server == nil || k.Server.StreamContentType() != "text/event-stream" {
		t.Fatalf("%+v", k)
	}
	if !reflect.DeepEqual(k.Codec, Codec{}) {
		t.Fatal("codec")
	}
}
