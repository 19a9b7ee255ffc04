package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

func replyFor(t *testing.T, hub, model string) native.Reply {
	t.Helper()
	call, err := Kind().Codec.Request([]byte(hub), model, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return call.Reply
}

const plainHub = `{"max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
const schemaHub = `{"max_tokens":100,"stream":true,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"messages":[{"role":"user","content":"hi"}]}`

func TestAnswer(t *testing.T) {
	body := `{"output":{"message":{"role":"assistant","content":[
	 {"reasoningContent":{"reasoningText":{"text":"think","signature":"sg"}}},
	 {"text":"Let me look."},
	 {"toolUse":{"toolUseId":"tooluse_1","name":"look","input":{"q":"cats"}}}]}},
	 "stopReason":"tool_use","usage":{"inputTokens":11,"outputTokens":22,"totalTokens":40,"cacheReadInputTokens":3,"cacheWriteInputTokens":4},"metrics":{"latencyMs":9}}`
	got, err := replyFor(t, plainHub, claude).Answer([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v["id"].(string), "msg_bedrock_") {
		t.Errorf("id %v", v["id"])
	}
	delete(v, "id")
	want := jsonOf(t, `{"type":"message","role":"assistant","model":"`+claude+`","content":[
	 {"type":"thinking","thinking":"think","signature":"sg"},
	 {"type":"text","text":"Let me look."},
	 {"type":"tool_use","id":"tooluse_1","name":"look","input":{"q":"cats"}}],
	 "stop_reason":"tool_use","stop_sequence":null,
	 "usage":{"input_tokens":11,"output_tokens":22,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}`)
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("answer %s", got)
	}
	// The gateway reads the usage as it reads Anthropic's.
	n, found, valid, finish, in := protocol.AnswerUsage(got)
	if n != 22 || !found || !valid || finish != "tool_use" || in.Tokens != 18 || in.Cached != 3 {
		t.Fatalf("AnswerUsage: %d %v %v %q %+v", n, found, valid, finish, in)
	}
	again, _ := replyFor(t, plainHub, claude).Answer([]byte(body))
	if !bytes.Equal(got, again) {
		t.Fatal("the same answer got another id")
	}
}

func TestAnswerStopReasons(t *testing.T) {
	for in, want := range map[string]string{"end_turn": "end_turn", "max_tokens": "max_tokens", "stop_sequence": "stop_sequence", "tool_use": "tool_use", "guardrail_intervened": "refusal", "content_filtered": "refusal"} {
		got, err := replyFor(t, plainHub, nova).Answer([]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"x"}]}},"stopReason":"` + in + `","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, finish := protocol.OutputTokens(got); finish != want {
			t.Errorf("%s → %s, want %s", in, finish, want)
		}
	}
}

func TestAnswerRaisesTheForcedToolToText(t *testing.T) {
	// Words written beside the forced tool (a preamble) are not the
	// answer: its text must be the JSON alone.
	body := `{"output":{"message":{"role":"assistant","content":[{"text":"Here is the JSON:"},{"toolUse":{"toolUseId":"tooluse_9","name":"sluice_json_answer","input":{ "city" : "Paris" }}}]}},"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12}}`
	got, err := replyFor(t, schemaHub, nova).Answer([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Content []struct {
			Type, Text string
		}
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Content) != 1 || v.Content[0].Type != "text" || v.Content[0].Text != `{"city":"Paris"}` || v.StopReason != "end_turn" {
		t.Fatalf("answer %s", got)
	}
	// Without a forced tool, a tool of that name is a tool call.
	got, _ = replyFor(t, plainHub, nova).Answer([]byte(body))
	if !bytes.Contains(got, []byte(`"type":"tool_use"`)) {
		t.Fatalf("unforced: %s", got)
	}
}

func TestAnswerMalformed(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"output":{}}`, `{"output":{"message":{"content":[]}}}`, `{"output":{"message":{"content":[{"video":{}}]}},"stopReason":"end_turn"}`} {
		if _, err := replyFor(t, plainHub, nova).Answer([]byte(body)); !errors.Is(err, translate.ErrResponse) {
			t.Errorf("%q: %v", body, err)
		}
	}
}

// cv frames one ConverseStream event.
func cv(typ, payload string) []byte { return AppendMessage(nil, eventMessage(typ, []byte(payload))) }

func joined(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// drain reads every hub event of a Converse stream, one byte at a time.
func drain(t *testing.T, r native.Reply, stream []byte) ([]byte, error) {
	t.Helper()
	ev := r.Stream(iotest.OneByteReader(bytes.NewReader(stream)))
	var out []byte
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("Next never ends")
		}
		b, err := ev.Next()
		out = append(out, b...)
		if err != nil {
			return out, err
		}
		if len(b) == 0 {
			t.Fatal("Next returned nothing and no error")
		}
	}
}

func names(sse []byte) []string {
	events, _ := translate.ParseEvents(sse)
	var n []string
	for _, e := range events {
		n = append(n, e.Name)
	}
	return n
}

var toolStream = joined(
	cv("messageStart", `{"role":"assistant"}`),
	cv("contentBlockDelta", `{"delta":{"reasoningContent":{"text":"hm"}},"contentBlockIndex":0}`),
	cv("contentBlockDelta", `{"delta":{"reasoningContent":{"signature":"sig"}},"contentBlockIndex":0}`),
	cv("contentBlockStop", `{"contentBlockIndex":0}`),
	cv("contentBlockDelta", `{"delta":{"text":"Hel"},"contentBlockIndex":1}`),
	cv("contentBlockDelta", `{"delta":{"text":"lo"},"contentBlockIndex":1}`),
	cv("contentBlockStop", `{"contentBlockIndex":1}`),
	cv("contentBlockStart", `{"start":{"toolUse":{"toolUseId":"tooluse_1","name":"look"}},"contentBlockIndex":2}`),
	cv("contentBlockDelta", `{"delta":{"toolUse":{"input":"{\"q\":"}},"contentBlockIndex":2}`),
	cv("contentBlockDelta", `{"delta":{"toolUse":{"input":"\"cats\"}"}},"contentBlockIndex":2}`),
	cv("contentBlockStop", `{"contentBlockIndex":2}`),
	cv("messageStop", `{"stopReason":"tool_use"}`),
	cv("metadata", `{"usage":{"inputTokens":12,"outputTokens":34,"totalTokens":51,"cacheReadInputTokens":5},"metrics":{"latencyMs":80}}`),
)

func TestStreamTranslatesAndTheGatewayAcceptsIt(t *testing.T) {
	sse, err := drain(t, replyFor(t, plainHub, claude), toolStream)
	if err != io.EOF {
		t.Fatalf("end: %v\n%s", err, sse)
	}
	want := []string{"message_start",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if got := names(sse); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v\n%s", got, sse)
	}
	for _, s := range []string{
		`"content_block":{"signature":"","thinking":"","type":"thinking"}`,
		`"delta":{"signature":"sig","type":"signature_delta"}`,
		`"content_block":{"text":"","type":"text"},"index":1`,
		`"content_block":{"id":"tooluse_1","input":{},"name":"look","type":"tool_use"},"index":2`,
		`"delta":{"partial_json":"\"cats\"}","type":"input_json_delta"},"index":2`,
		`"stop_reason":"tool_use"`,
	} {
		if !bytes.Contains(sse, []byte(s)) {
			t.Errorf("missing %s in\n%s", s, sse)
		}
	}
	check := protocol.NewStreamCheck(protocol.Anthropic)
	check.Feed(sse)
	if got := check.End(); got != protocol.StreamOK {
		t.Fatalf("stream check: %s", got)
	}
	// Usage survives: the final message_delta carries metadata's counts.
	var u protocol.StreamUsage
	for i := range sse {
		u.Write(sse[i : i+1])
	}
	if n, final := u.Tokens(); n != 34 || !final {
		t.Errorf("output tokens %d final %v, want 34", n, final)
	}
	if in, ok := u.InputTokens(); in != 17 || !ok || u.CachedTokens() != 5 {
		t.Errorf("input %d %v cached %d, want 17 and 5", in, ok, u.CachedTokens())
	}
	if u.FinishReason() != "tool_use" {
		t.Errorf("finish %q", u.FinishReason())
	}
	// A stream cut after message_start has no final count: message_start's
	// zero is provisional, as Anthropic's own placeholder is.
	var cut protocol.StreamUsage
	cut.Write(sse[:bytes.Index(sse, []byte("event: content_block_start"))])
	if _, final := cut.Tokens(); final {
		t.Error("message_start's output count was read as final")
	}
}

func TestStreamToOpenAIAcceptsIt(t *testing.T) {
	// OpenAI's chunks have no thinking: a stream without it.
	stream := joined(toolStream[:0],
		cv("messageStart", `{"role":"assistant"}`),
		cv("contentBlockDelta", `{"delta":{"text":"Hi"},"contentBlockIndex":0}`),
		cv("contentBlockStop", `{"contentBlockIndex":0}`),
		cv("contentBlockStart", `{"start":{"toolUse":{"toolUseId":"tooluse_1","name":"look"}},"contentBlockIndex":1}`),
		cv("contentBlockDelta", `{"delta":{"toolUse":{"input":"{}"}},"contentBlockIndex":1}`),
		cv("contentBlockStop", `{"contentBlockIndex":1}`),
		cv("messageStop", `{"stopReason":"tool_use"}`),
		cv("metadata", `{"usage":{"inputTokens":3,"outputTokens":4,"totalTokens":7},"metrics":{"latencyMs":1}}`),
	)
	sse, err := drain(t, replyFor(t, plainHub, nova), stream)
	if err != io.EOF {
		t.Fatal(err)
	}
	tr := translate.NewStreamToOpenAI(translate.StreamConfig{IncludeUsage: true})
	events, _ := translate.ParseEvents(sse)
	var out []translate.Event
	for _, ev := range events {
		o, err := tr.Feed(ev)
		if err != nil {
			t.Fatalf("OpenAI translation refused %s: %v", ev.Data, err)
		}
		out = append(out, o...)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	all := translate.Encode(out)
	for _, s := range []string{`"finish_reason":"tool_calls"`, `"completion_tokens":4`, `"prompt_tokens":3`, "[DONE]"} {
		if !bytes.Contains(all, []byte(s)) {
			t.Errorf("missing %s in\n%s", s, all)
		}
	}
}

func TestStreamRaisesTheForcedToolToText(t *testing.T) {
	stream := joined(
		cv("messageStart", `{"role":"assistant"}`),
		// A preamble beside the forced tool is not the answer.
		cv("contentBlockDelta", `{"delta":{"text":"Here is "},"contentBlockIndex":0}`),
		cv("contentBlockDelta", `{"delta":{"text":"the JSON:"},"contentBlockIndex":0}`),
		cv("contentBlockStop", `{"contentBlockIndex":0}`),
		cv("contentBlockStart", `{"start":{"toolUse":{"toolUseId":"tooluse_1","name":"sluice_json_answer"}},"contentBlockIndex":1}`),
		cv("contentBlockDelta", `{"delta":{"toolUse":{"input":"{\"city\":"}},"contentBlockIndex":1}`),
		cv("contentBlockDelta", `{"delta":{"toolUse":{"input":"\"Paris\"}"}},"contentBlockIndex":1}`),
		cv("contentBlockStop", `{"contentBlockIndex":1}`),
		cv("messageStop", `{"stopReason":"tool_use"}`),
		cv("metadata", `{"usage":{"inputTokens":3,"outputTokens":9,"totalTokens":12},"metrics":{"latencyMs":1}}`),
	)
	sse, err := drain(t, replyFor(t, schemaHub, nova), stream)
	if err != io.EOF {
		t.Fatal(err)
	}
	events, _ := translate.ParseEvents(sse)
	text := ""
	for _, ev := range events {
		var v struct {
			ContentBlock *struct{ Type string } `json:"content_block"`
			Delta        *struct {
				Type, Text string
				StopReason string `json:"stop_reason"`
			}
		}
		_ = json.Unmarshal(ev.Data, &v)
		if v.ContentBlock != nil && v.ContentBlock.Type != "text" {
			t.Fatalf("a %s block: %s", v.ContentBlock.Type, ev.Data)
		}
		if v.Delta != nil && v.Delta.Type == "text_delta" {
			text += v.Delta.Text
		}
		if v.Delta != nil && v.Delta.StopReason != "" && v.Delta.StopReason != "end_turn" {
			t.Fatalf("stop reason %q", v.Delta.StopReason)
		}
	}
	if text != `{"city":"Paris"}` {
		t.Fatalf("text %q\n%s", text, sse)
	}
}

func TestStreamExceptionIsAnErrorEvent(t *testing.T) {
	for exc, typ := range map[string]string{
		"throttlingException": "rate_limit_error", "modelStreamErrorException": "api_error", "internalServerException": "api_error",
		"serviceUnavailableException": "overloaded_error", "validationException": "invalid_request_error",
	} {
		stream := joined(
			cv("messageStart", `{"role":"assistant"}`),
			cv("contentBlockDelta", `{"delta":{"text":"par"},"contentBlockIndex":0}`),
			AppendMessage(nil, exceptionMessage(exc, []byte(`{"message":"it broke"}`))),
		)
		sse, err := drain(t, replyFor(t, plainHub, nova), stream)
		if !errors.Is(err, translate.ErrStreamFailed) {
			t.Fatalf("%s: %v", exc, err)
		}
		events, _ := translate.ParseEvents(sse)
		last := events[len(events)-1]
		want := `{"type":"error","error":{"type":"` + typ + `","message":"` + exc + `: it broke"}}`
		if last.Name != "error" || string(last.Data) != want {
			t.Errorf("%s: last event %s %s", exc, last.Name, last.Data)
		}
		check := protocol.NewStreamCheck(protocol.Anthropic)
		check.Feed(sse)
		if got := check.End(); got != protocol.StreamErrorEvent {
			t.Errorf("%s: stream check %s", exc, got)
		}
	}
}

func TestStreamEnds(t *testing.T) {
	start := cv("messageStart", `{"role":"assistant"}`)
	text := cv("contentBlockDelta", `{"delta":{"text":"hi"},"contentBlockIndex":0}`)
	stop := cv("messageStop", `{"stopReason":"end_turn"}`)
	meta := cv("metadata", `{"usage":{"inputTokens":3,"outputTokens":9,"totalTokens":12},"metrics":{"latencyMs":1}}`)

	// Cut anywhere before messageStop: truncated, no terminator.
	whole := joined(start, text, stop)
	for n := 0; n < len(start)+len(text)+len(stop); n++ {
		sse, err := drain(t, replyFor(t, plainHub, nova), whole[:n])
		if !errors.Is(err, translate.ErrTruncated) || bytes.Contains(sse, []byte("message_stop")) {
			t.Fatalf("cut at %d: %v\n%s", n, err, sse)
		}
	}
	// messageStop then a clean end without metadata: ends, without usage.
	sse, err := drain(t, replyFor(t, plainHub, nova), joined(start, text, stop))
	if err != io.EOF || !bytes.Contains(sse, []byte("message_stop")) || bytes.Contains(sse, []byte(`"output_tokens":9`)) {
		t.Fatalf("no metadata: %v\n%s", err, sse)
	}
	// The open text block is closed before message_delta.
	if got := names(sse); !reflect.DeepEqual(got[len(got)-3:], []string{"content_block_stop", "message_delta", "message_stop"}) {
		t.Fatalf("events %v", got)
	}
	// metadata before messageStop is held for message_delta.
	sse, err = drain(t, replyFor(t, plainHub, nova), joined(start, text, meta, stop))
	if err != io.EOF || !bytes.Contains(sse, []byte(`"output_tokens":9`)) {
		t.Fatalf("metadata first: %v\n%s", err, sse)
	}
	// Out of order or malformed: ErrResponse.
	for name, s := range map[string][]byte{
		"delta first":     joined(text),
		"twice started":   joined(start, start),
		"after stop":      joined(start, stop, text),
		"tool delta":      joined(start, cv("contentBlockDelta", `{"delta":{"toolUse":{"input":"{}"}},"contentBlockIndex":0}`)),
		"not json":        joined(start, cv("contentBlockDelta", `{`)),
		"unknown message": joined(AppendMessage(nil, Message{Headers: []Header{StringHeader(":message-type", "gossip")}})),
	} {
		if _, err := drain(t, replyFor(t, plainHub, nova), s); !errors.Is(err, translate.ErrResponse) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
