package gemini

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

func TestAnswer(t *testing.T) {
	cases := []struct {
		name, in string
		want     string // the hub answer, as JSON
	}{
		{"text", `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"},{"text":"lo"}]},"finishReason":"STOP","index":0}],
			"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"totalTokenCount":13},"modelVersion":"gemini-2.5-flash-001","responseId":"abc"}`,
			`{"id":"msg_abc","type":"message","role":"assistant","model":"gemini-2.5-flash-001","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","stop_sequence":null,
			"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}`},
		{"function calls, thoughts skipped, cache and thinking tokens", `{"candidates":[{"content":{"role":"model","parts":[{"text":"planning","thought":true},{"text":"Let me look."},
			{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},{"functionCall":{"id":"call-7","name":"get_time","args":{}}}]},"finishReason":"STOP"}],
			"usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":60,"candidatesTokenCount":20,"thoughtsTokenCount":30}}`,
			`{"id":"msg_gemini","type":"message","role":"assistant","model":"gemini-2.5-flash","content":[{"type":"text","text":"Let me look."},
			{"type":"tool_use","id":"toolu_gemini_0","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"call-7","name":"get_time","input":{}}],
			"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":40,"cache_creation_input_tokens":0,"cache_read_input_tokens":60,"output_tokens":50}}`},
		{"max tokens", `{"candidates":[{"content":{"parts":[{"text":"cut"}]},"finishReason":"MAX_TOKENS"}]}`,
			`{"id":"msg_gemini","type":"message","role":"assistant","model":"gemini-2.5-flash","content":[{"type":"text","text":"cut"}],"stop_reason":"max_tokens","stop_sequence":null,
			"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"safety, no content", `{"candidates":[{"finishReason":"SAFETY"}],"usageMetadata":{"promptTokenCount":5}}`,
			`{"id":"msg_gemini","type":"message","role":"assistant","model":"gemini-2.5-flash","content":[],"stop_reason":"refusal","stop_sequence":null,
			"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"prompt blocked", `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":7}}`,
			`{"id":"msg_gemini","type":"message","role":"assistant","model":"gemini-2.5-flash","content":[],"stop_reason":"refusal","stop_sequence":null,
			"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"other finish", `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}`,
			`{"id":"msg_gemini","type":"message","role":"assistant","model":"gemini-2.5-flash","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,
			"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Reply{Model: "gemini-2.5-flash"}.Answer([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, got, c.want)
			// The gateway reads the answer's usage as Anthropic's.
			n, found, valid, _, _ := protocol.AnswerUsage(got)
			var h native.Answer
			json.Unmarshal(got, &h)
			if !found || !valid || int64(n) != h.Usage.OutputTokens {
				t.Fatalf("protocol.AnswerUsage = %d %v %v", n, found, valid)
			}
		})
	}
}

func TestAnswerMalformed(t *testing.T) {
	for _, in := range []string{`not json`, `{}`, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":[1]}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}]}}]}`, `{"error":{"code":500,"message":"x"}}`} {
		if _, err := (Reply{}).Answer([]byte(in)); !errors.Is(err, translate.ErrResponse) {
			t.Errorf("Answer(%s) = %v, want ErrResponse", in, err)
		}
	}
}

func assertJSON(t testing.TB, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %s", got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

const gmStreamText = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":12,\"totalTokenCount\":12},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"r1\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\"}],\"role\":\"model\"},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":12,\"totalTokenCount\":12},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"r1\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"!\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":12,\"cachedContentTokenCount\":4,\"candidatesTokenCount\":5,\"thoughtsTokenCount\":2,\"totalTokenCount\":19},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"r1\"}\r\n\r\n"

func TestStreamText(t *testing.T) {
	for _, one := range []bool{false, true} {
		got, err := hubStream(gmStreamText, one)
		if err != io.EOF {
			t.Fatalf("end = %v, want io.EOF", err)
		}
		evs := hubEvents(t, got)
		var types []string
		text := ""
		for _, e := range evs {
			types = append(types, e["type"].(string))
			if d, ok := e["delta"].(map[string]any); ok && d["type"] == "text_delta" {
				text += d["text"].(string)
			}
		}
		want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
		if !reflect.DeepEqual(types, want) {
			t.Fatalf("events %v\nwant %v", types, want)
		}
		if text != "Hello!" {
			t.Fatalf("text %q", text)
		}
		start := evs[0]["message"].(map[string]any)
		if start["id"] != "msg_r1" || start["model"] != "gemini-2.5-flash" {
			t.Fatalf("message_start %v", start)
		}
		if u := start["usage"].(map[string]any); u["input_tokens"] != 12.0 || u["output_tokens"] != 1.0 {
			t.Fatalf("message_start usage %v", u)
		}
		md := evs[6]
		if md["delta"].(map[string]any)["stop_reason"] != "end_turn" {
			t.Fatalf("message_delta %v", md)
		}
		if u := md["usage"].(map[string]any); u["output_tokens"] != 7.0 || u["input_tokens"] != 8.0 || u["cache_read_input_tokens"] != 4.0 {
			t.Fatalf("message_delta usage %v", u)
		}
		verdict, out, in := checkHub(t, got)
		if verdict != protocol.StreamOK || out != 7 || in != 12 {
			t.Fatalf("gateway reads verdict %q, output %d, input %d; want ok, 7, 12", verdict, out, in)
		}
	}
}

func TestStreamFunctionCall(t *testing.T) {
	gm := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Checking.\"}],\"role\":\"model\"}}]}\n\n" +
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}},{\"functionCall\":{\"id\":\"c2\",\"name\":\"get_time\"}}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":30,\"candidatesTokenCount\":9}}\n\n"
	got, err := hubStream(gm, true)
	if err != io.EOF {
		t.Fatal(err)
	}
	evs := hubEvents(t, got)
	var starts []map[string]any
	var args []string
	for _, e := range evs {
		if e["type"] == "content_block_start" {
			starts = append(starts, e["content_block"].(map[string]any))
		}
		if d, ok := e["delta"].(map[string]any); ok && d["type"] == "input_json_delta" {
			args = append(args, d["partial_json"].(string))
		}
	}
	if len(starts) != 3 || starts[1]["id"] != "toolu_gemini_0" || starts[1]["name"] != "get_weather" || starts[2]["id"] != "c2" {
		t.Fatalf("block starts %v", starts)
	}
	if !reflect.DeepEqual(args, []string{`{"city":"Paris"}`, `{}`}) {
		t.Fatalf("args %q", args)
	}
	if evs[len(evs)-2]["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Fatalf("stop %v", evs[len(evs)-2])
	}
	if v, out, _ := checkHub(t, got); v != protocol.StreamOK || out != 9 {
		t.Fatalf("verdict %q out %d", v, out)
	}
}

func TestStreamTruncated(t *testing.T) {
	// Cut before the finishReason chunk, and inside it.
	cut := strings.Index(gmStreamText, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"!\"")
	for _, at := range []int{cut, cut + 40, len(gmStreamText) - 5} {
		got, err := hubStream(gmStreamText[:at], true)
		if !errors.Is(err, translate.ErrTruncated) {
			t.Fatalf("cut at %d: end = %v, want ErrTruncated", at, err)
		}
		if strings.Contains(string(got), "message_stop") || strings.Contains(string(got), "message_delta") {
			t.Fatalf("cut at %d: a made-up terminator: %s", at, got)
		}
		if v, _, _ := checkHub(t, got); v != protocol.StreamUnterminated {
			t.Fatalf("cut at %d: verdict %q", at, v)
		}
	}
	// The last event without its blank line is still whole.
	got, err := hubStream(strings.TrimRight(gmStreamText, "\r\n"), false)
	if err != io.EOF || !strings.Contains(string(got), "message_stop") {
		t.Fatalf("end = %v, %s", err, got)
	}
	// Nothing at all.
	if got, err := hubStream("", false); !errors.Is(err, translate.ErrTruncated) || len(got) != 0 {
		t.Fatalf("empty stream: %q %v", got, err)
	}
}

func TestStreamErrorChunk(t *testing.T) {
	gm := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]}}]}\r\n\r\n" +
		"data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\r\n\r\n" +
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ignored\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n"
	got, err := hubStream(gm, true)
	if !errors.Is(err, translate.ErrStreamFailed) {
		t.Fatalf("end = %v", err)
	}
	evs := hubEvents(t, got)
	last := evs[len(evs)-1]
	if last["type"] != "error" {
		t.Fatalf("last event %v", last)
	}
	e := last["error"].(map[string]any)
	if e["type"] != "overloaded_error" || e["message"] != "The model is overloaded." {
		t.Fatalf("error %v", e)
	}
	if strings.Contains(string(got), "ignored") {
		t.Fatal("content after the error went out")
	}
	if v, _, _ := checkHub(t, got); v != protocol.StreamErrorEvent {
		t.Fatalf("verdict %q", v)
	}
}

func TestStreamPromptBlocked(t *testing.T) {
	got, err := hubStream("data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":8}}\r\n\r\n", false)
	if err != io.EOF {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"stop_reason":"refusal"`) {
		t.Fatalf("%s", got)
	}
	if v, _, in := checkHub(t, got); v != protocol.StreamOK || in != 8 {
		t.Fatalf("verdict %q input %d", v, in)
	}
}

func TestStreamMalformed(t *testing.T) {
	for _, gm := range []string{"data: {nope\n\n", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"args\":{}}}]}}]}\n\n"} {
		_, err := hubStream(gm, false)
		if !errors.Is(err, translate.ErrResponse) {
			t.Errorf("%q: %v, want ErrResponse", gm, err)
		}
	}
}

// countingReader counts what was read from it.
type countingReader struct {
	n, limit int
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n >= r.limit {
		return 0, io.EOF
	}
	p = p[:min(len(p), r.limit-r.n)]
	for i := range p {
		p[i] = 'x'
	}
	if r.n == 0 {
		copy(p, "data: ")
	}
	r.n += len(p)
	return len(p), nil
}

func TestStreamMaxEvent(t *testing.T) {
	// One event that never ends: the reader stops just past MaxEvent.
	r := &countingReader{limit: 10 * native.MaxEvent}
	_, err := drain(Reply{}.Stream(r))
	if !errors.Is(err, translate.ErrResponse) {
		t.Fatalf("end = %v, want ErrResponse", err)
	}
	if r.n > native.MaxEvent+1 {
		t.Fatalf("read %d bytes of one event, MaxEvent is %d", r.n, native.MaxEvent)
	}
	// An event just under the bound is fine.
	text := strings.Repeat("a", native.MaxEvent-200)
	gm := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"" + text + "\"}]},\"finishReason\":\"STOP\"}]}\n\n"
	if _, err := hubStream(gm, false); err != io.EOF {
		t.Fatalf("a big event under MaxEvent: %v", err)
	}
}

func TestStreamReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader(gmStreamText[:50]), errReader{boom})
	_, err := drain(Reply{}.Stream(r))
	if err != boom {
		t.Fatalf("end = %v, want the read error as it is", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestStreamLongEventInSmallReads: an event of many lines read a byte at
// a time is parsed once it is whole, not at every line (which took
// minutes at this size).
func TestStreamLongEventInSmallReads(t *testing.T) {
	var b strings.Builder
	b.WriteString("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"finishReason\":\"STOP\"}],\n")
	for range 40000 {
		b.WriteString("data: \"usageMetadata\":{},\n")
	}
	b.WriteString("data: \"modelVersion\":\"m\"}\n\n")
	got, err := hubStream(b.String(), true)
	if err != io.EOF || !strings.Contains(string(got), "message_stop") {
		t.Fatalf("end = %v", err)
	}
}
