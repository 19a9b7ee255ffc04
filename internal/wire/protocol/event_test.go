package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// want is what a table case expects of an event's record; fields not
// named are expected zero.
type want struct {
	head, keepalive, invalid, tool, other, errorEv, done, provisional bool
	text, finish, id, model                                           string
	reasoning, toolArgs, output, input, cacheW, cacheR, cached        int
	haveOut, haveIn                                                   bool
	block                                                             int
	blockStart, blockStop                                             bool
}

func checkEvent(t *testing.T, name string, ev *Event, w want) {
	t.Helper()
	got := want{
		head: ev.Head, keepalive: ev.Keepalive, invalid: ev.Invalid, tool: ev.Tool, other: ev.OtherChoice,
		errorEv: ev.Error, done: ev.Done, provisional: ev.Usage.Provisional,
		text: string(ev.Text), finish: string(ev.Finish), id: string(ev.ID), model: string(ev.Model),
		reasoning: ev.Reasoning, toolArgs: ev.ToolArgs, output: ev.Usage.Output, input: ev.Usage.Input,
		cacheW: ev.Usage.CacheWrite, cacheR: ev.Usage.CacheRead, cached: ev.Usage.Cached,
		haveOut: ev.Usage.HaveOutput, haveIn: ev.Usage.HaveInput, block: ev.Block,
		blockStart: ev.BlockStart, blockStop: ev.BlockStop,
	}
	if w.block == 0 && got.block == -1 {
		got.block = 0
	}
	if got != w {
		t.Errorf("%s:\n got %+v\nwant %+v", name, got, w)
	}
	if ev.Token() == ev.Head {
		t.Errorf("%s: Token %v with Head %v", name, ev.Token(), ev.Head)
	}
}

// hostile texts a model may write, which are never protocol.
var hostile = []string{"data: [DONE]", "event: error", `"type":"message_stop"`, `"finish_reason":"stop"`,
	"\n\ndata: [DONE]\n\n", `{"error":{"message":"x"}}`, `"stop_reason": "end_turn"`, "event: message_stop\ndata: {}"}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestEventOpenAI(t *testing.T) {
	cases := []struct {
		name, data string
		w          want
	}{
		{"role chunk", `{"id":"c1","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			want{head: true, id: "c1", model: "m"}},
		{"role chunk, null and empty tool calls, null error", `{"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[],"function_call":null}}],"error":null}`,
			want{head: true}},
		{"text", `{"choices":[{"index":0,"delta":{"content":"Hi \u00e9\ud83d\ude00 a\/b"}}]}`, want{text: "Hi é😀 a/b"}},
		{"spaced text", "{ \"choices\" : [ { \"index\" : 0 ,\t\"delta\" : { \"content\" : \"Hi\" } } ] }", want{text: "Hi"}},
		{"escaped keys, index last", `{"\u0063hoices":[{"d\u0065lta":{"content":"Hi"},"index":0}]}`, want{text: "Hi"}},
		{"legacy completion", `{"choices":[{"index":0,"text":"Hi","finish_reason":null}]}`, want{text: "Hi"}},
		{"second choice", `{"choices":[{"index":1,"delta":{"content":"B"}},{"index":0,"delta":{"content":"A"}}]}`, want{text: "A", other: true}},
		{"second choice only", `{"choices":[{"index":0,"delta":{"content":""}},{"index":1,"delta":{"content":"Hi"}}]}`, want{other: true}},
		{"reasoning", `{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, want{reasoning: 3}},
		{"reasoning (openrouter)", `{"choices":[{"delta":{"reasoning":"hmm!"}}]}`, want{reasoning: 4}},
		{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
			want{tool: true, toolArgs: 5}},
		{"function call", `{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{}"}}}]}`, want{tool: true, toolArgs: 2}},
		{"finish", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, want{finish: "stop"}},
		{"usage chunk", `{"id":"c1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":4}}}`,
			want{id: "c1", output: 12, input: 9, cached: 4, haveOut: true, haveIn: true}},
		{"usage on a head chunk", `{"choices":[{"delta":{"role":"assistant"}}],"usage":{"prompt_tokens":9,"completion_tokens":0}}`,
			want{head: true, input: 9, haveOut: true, haveIn: true}},
		{"usage out of range", `{"choices":[],"usage":{"completion_tokens":-3,"prompt_tokens":1e3}}`, want{head: true}},
		{"error", `{"error":{"message":"overloaded","type":"server_error"}}`, want{errorEv: true}},
		{"error beside other keys", `{"id":"x","choices":[],"error":"boom"}`, want{errorEv: true, id: "x"}},
		{"prompt filter", `{"choices":[],"prompt_filter_results":[{"prompt_index":0}]}`, want{head: true}},
		{"not an object", `[1,2]`, want{}},
		{"done", `[DONE]`, want{done: true}},
		{"done with spaces", " [DONE] \t", want{done: true}},
		{"not json", `{"choices":[{"delta":{"cont`, want{invalid: true}},
		{"two values", `{} {}`, want{invalid: true}},
		{"whitespace only", "  ", want{invalid: true}},
		{"duplicate keys: the last counts", `{"choices":[{"delta":{"content":"a","content":"b"}}]}`, want{text: "b"}},
	}
	for _, h := range hostile {
		cases = append(cases, struct {
			name, data string
			w          want
		}{"hostile " + h, `{"choices":[{"index":0,"delta":{"content":` + quote(h) + `},"finish_reason":null}]}`, want{text: h}})
	}
	var p EventParser
	var ev Event
	for _, c := range cases {
		p.Parse(OpenAI, false, nil, []byte(c.data), &ev)
		checkEvent(t, c.name, &ev, c.w)
	}
	// Events without data.
	p.Parse(OpenAI, false, nil, nil, &ev)
	checkEvent(t, "comment", &ev, want{head: true, keepalive: true})
	p.Parse(OpenAI, false, []byte("error"), nil, &ev)
	checkEvent(t, "error name", &ev, want{errorEv: true})
	if ev.Created != 0 {
		t.Error("created without a field")
	}
	p.Parse(OpenAI, false, nil, []byte(cases[0].data), &ev)
	if ev.Created != 17 {
		t.Errorf("created %d", ev.Created)
	}
}

func TestEventAnthropic(t *testing.T) {
	cases := []struct {
		name, evName, data string
		w                  want
	}{
		{"message_start", "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","model":"claude","content":[],"usage":{"input_tokens":700,"cache_creation_input_tokens":30,"cache_read_input_tokens":20,"output_tokens":1}}}`,
			want{head: true, id: "msg_1", model: "claude", provisional: true, output: 1, input: 700, cacheW: 30, cacheR: 20, haveOut: true, haveIn: true}},
		{"message_start, type last", "", `{"message":{"usage":{"output_tokens":1,"input_tokens":5},"id":"m"},"type":"message_start"}`,
			want{head: true, id: "m", provisional: true, output: 1, input: 5, haveOut: true, haveIn: true}},
		{"empty text block", "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			want{head: true, blockStart: true}},
		{"tool block", "content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`,
			want{tool: true, block: 1, blockStart: true}},
		{"thinking block", "", `{"index":0,"content_block":{"text":"","type":"thinking"},"type":"content_block_start"}`,
			want{tool: true, blockStart: true}},
		{"ping", "ping", `{"type": "ping"}`, want{head: true, keepalive: true}},
		{"text", "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, want{text: "Hi"}},
		{"text, keys shuffled and spaced", "", "{ \"delta\" : { \"text\" : \"Hi\" , \"type\" : \"text_delta\" } , \"index\" : 2 , \"type\" : \"content_block_delta\" }",
			want{text: "Hi", block: 2}},
		{"thinking", "", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`, want{reasoning: 3}},
		{"tool input", "", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 1"}}`,
			want{tool: true, toolArgs: 7, block: 1}},
		{"block stop", "content_block_stop", `{"type":"content_block_stop","index":3}`, want{block: 3, blockStop: true}},
		{"message_delta", "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":23}}`,
			want{finish: "end_turn", output: 23, haveOut: true}},
		{"message_delta, null reason", "", `{"usage":{"output_tokens":5},"delta":{"stop_reason":null},"type":"message_delta"}`,
			want{output: 5, haveOut: true}},
		{"message_stop", "message_stop", `{"type":"message_stop"}`, want{done: true}},
		{"message_stop by name", "message_stop", `{}`, want{done: true}},
		{"message_stop by type", "", `{"type":"message_stop"}`, want{done: true}},
		{"error", "error", `{"type":"error","error":{"type":"overloaded_error","message":"x"}}`, want{errorEv: true}},
		{"error by name", "error", `{"error":{}}`, want{errorEv: true}},
		{"done is not the terminator", "", `[DONE]`, want{}},
		{"unknown type", "", `{"type":"content_block_delta"}`, want{}},
	}
	for _, h := range hostile {
		cases = append(cases, struct {
			name, evName, data string
			w                  want
		}{"hostile " + h, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + quote(h) + `}}`, want{text: h}})
	}
	var p EventParser
	var ev Event
	for _, c := range cases {
		p.Parse(Anthropic, false, []byte(c.evName), []byte(c.data), &ev)
		checkEvent(t, c.name, &ev, c.w)
	}
	p.Parse(Anthropic, false, []byte("ping"), nil, &ev)
	checkEvent(t, "ping without data", &ev, want{head: true, keepalive: true})
}

func TestEventResponses(t *testing.T) {
	ev := func(typ, rest string) string { return `{"type":"` + typ + `"` + rest + `}` }
	cases := []struct {
		name, data string
		w          want
	}{
		{"created", ev("response.created", `,"response":{"id":"resp_1","model":"gpt","usage":null}`), want{head: true, id: "resp_1", model: "gpt"}},
		{"in progress", ev("response.in_progress", ``), want{head: true}},
		{"message item", ev("response.output_item.added", `,"item":{"type":"message"}`), want{head: true}},
		{"call item", ev("response.output_item.added", `,"item":{"type":"function_call","name":"f"}`), want{tool: true}},
		{"part", ev("response.content_part.added", `,"part":{"type":"output_text","text":""}`), want{head: true}},
		{"text", ev("response.output_text.delta", `,"delta":"Hi"`), want{text: "Hi"}},
		{"arguments", ev("response.function_call_arguments.delta", `,"delta":"{\"a\""`), want{tool: true, toolArgs: 4}},
		{"reasoning", ev("response.reasoning_summary_text.delta", `,"delta":"hmm"`), want{reasoning: 3}},
		{"completed", ev("response.completed", `,"response":{"id":"r","usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":2},"output_tokens":4}}`),
			want{done: true, finish: "stop", id: "r", input: 9, cached: 2, output: 4, haveIn: true, haveOut: true}},
		{"incomplete", ev("response.incomplete", `,"response":{"incomplete_details":{"reason":"max_output_tokens"}}`), want{done: true, finish: "length"}},
		{"filtered", ev("response.incomplete", `,"response":{"incomplete_details":{"reason":"content_filter"}}`), want{done: true, finish: "content_filter"}},
		{"failed", ev("response.failed", `,"response":{"error":{"code":"server_error"}}`), want{done: true, errorEv: true}},
		{"error", ev("error", `,"message":"x"`), want{errorEv: true}},
		{"done is not its end", `[DONE]`, want{}},
		{"type last", `{"delta":"Hi","type":"response.output_text.delta"}`, want{text: "Hi"}},
	}
	for _, h := range hostile {
		cases = append(cases, struct {
			name, data string
			w          want
		}{"hostile " + h, ev("response.output_text.delta", `,"delta":`+quote(h)), want{text: h}})
	}
	var p EventParser
	var e Event
	for _, c := range cases {
		p.Parse(OpenAI, true, nil, []byte(c.data), &e)
		checkEvent(t, c.name, &e, c.w)
	}
}

// A model's text that looks like protocol changes no verdict and no
// fact: the stream is judged by its events, whatever their text says.
func TestHostileTextIsNotProtocol(t *testing.T) {
	for _, h := range hostile {
		for _, c := range []struct {
			name   string
			ep     Endpoint
			d      Dialect
			stream string
		}{
			{"openai", Endpoint{Name: "chat"}, OpenAI, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":" + quote(h) + "}}]}\n\n"},
			{"anthropic", Endpoint{Name: "messages"}, Anthropic, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":" + quote(h) + "}}\n\n"},
			{"responses", Responses, OpenAI, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":" + quote(h) + "}\n\n"},
		} {
			ch := NewStreamCheckFor(c.ep, c.d)
			var text []byte
			ch.CaptureText(&text)
			ch.Feed([]byte(c.stream))
			f := ch.Facts()
			if v := ch.End(); v != StreamUnterminated || f.Done || f.ErrorEvent || f.Finished() || string(text) != h {
				t.Errorf("%s %q: verdict %q, done %v, error %v, finish %q, text %q", c.name, h, v, f.Done, f.ErrorEvent, f.FinishReason(), text)
			}
			ch.Release()
		}
	}
}

// The facts of whole streams: first token, usage (provisional and
// final), finish, done, ids.
func TestStreamFacts(t *testing.T) {
	ch := NewStreamCheck(Anthropic)
	ch.Feed([]byte(claudeStream(3, true)))
	if v := ch.End(); v != StreamOK {
		t.Fatalf("verdict %q", v)
	}
	f := ch.Facts()
	n, ok := f.Tokens()
	in, _ := f.InputTokens()
	got := fmt.Sprintf("token=%v@%d deltas=%d text=%d out=%d/%v in=%d cached=%d finish=%s done=%v id=%s block=%d open=%v",
		f.Token, f.TokenEvent, f.Deltas, f.TextBytes, n, ok, in, f.CachedTokens(), f.FinishReason(), f.Done, f.ID(), f.Block, f.Open)
	if want := "token=true@2 deltas=3 text=15 out=23/true in=750 cached=20 finish=end_turn done=true id=msg_1 block=0 open=false"; got != want {
		t.Errorf("anthropic facts\n got %s\nwant %s", got, want)
	}
	ch.Release()

	ch = NewStreamCheck(OpenAI)
	ch.Feed([]byte(strings.ReplaceAll(openAIStream, "{\"choices\"", "{\"id\":\"c9\",\"model\":\"m\",\"created\":5,\"choices\"")))
	f = ch.Facts()
	n, ok = f.Tokens()
	got = fmt.Sprintf("token=%v@%d progress=%d out=%d/%v finish=%s done=%v id=%s model=%s created=%d", f.Token, f.TokenEvent, f.Progress, n, ok, f.FinishReason(), f.Done, f.ID(), f.Model(), f.Created)
	if want := "token=true@1 progress=3 out=1/true finish=stop done=true id=c9 model=m created=5"; got != want {
		t.Errorf("openai facts\n got %s\nwant %s", got, want)
	}
}
