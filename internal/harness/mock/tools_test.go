package mock

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/sseenc"
)

const (
	weatherParams = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"}}}`
	oaiTools      = `"tools":[{"type":"function","function":{"name":"other","parameters":{}}},` +
		`{"type":"function","function":{"name":"get_weather","parameters":` + weatherParams + `}}]`
	antTools = `"tools":[{"name":"other","input_schema":{}},` +
		`{"name":"get_weather","input_schema":` + weatherParams + `}]`
	respTools = `"tools":[{"type":"web_search"},{"type":"function","name":"other","parameters":{}},` +
		`{"type":"function","name":"get_weather","parameters":` + weatherParams + `}]`
	// wantArgs is argsFor(weatherParams): 38 bytes, five tokens of
	// eight bytes (jsonTokens).
	wantArgs = `{"city":"mock","days":1,"metric":true}`
)

// toolDialect is one API's tool call request (whole; stream adds
// "stream":true), the name of its cap, and the reader of its whole
// answer; its stream is read by the wireDialect of the same name.
type toolDialect struct {
	wire  wireDialect
	cap   string
	whole func(m map[string]any) meaning
}

func (d toolDialect) body(stream bool, extra string) string {
	b := d.wire.body
	if stream {
		b = `{"stream":true,` + b[1:]
	}
	if extra != "" {
		// Last, so that it wins over the same key earlier on.
		b = b[:len(b)-1] + `,` + extra + `}`
	}
	return b
}

var toolDialects = []toolDialect{
	{wireDialect{"chat", "/v1/chat/completions",
		`{"model":"m",` + oaiTools + `,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"weather?"}]}`,
		wireDialects[0].read},
		"max_tokens",
		func(m map[string]any) meaning {
			msg := jobj(path(m, "choices", 0, "message"))
			return meaning{
				Text: jstr(msg["content"]), Finish: jstr(path(m, "choices", 0, "finish_reason")), Usage: jnum(path(m, "usage", "completion_tokens")),
				Call: jstr(path(msg, "tool_calls", 0, "function", "name")), Args: jstr(path(msg, "tool_calls", 0, "function", "arguments")),
			}
		}},
	{wireDialect{"messages", "/v1/messages",
		`{"model":"c","max_tokens":100,` + antTools + `,"tool_choice":{"type":"tool","name":"get_weather"},"messages":[{"role":"user","content":"weather?"}]}`,
		wireDialects[2].read},
		"max_tokens",
		func(m map[string]any) meaning {
			x := meaning{Finish: jstr(m["stop_reason"]), Usage: jnum(path(m, "usage", "output_tokens"))}
			for _, b := range m["content"].([]any) {
				switch b := jobj(b); jstr(b["type"]) {
				case "text":
					x.Text += jstr(b["text"])
				case "tool_use":
					in, _ := json.Marshal(b["input"])
					x.Call, x.Args = jstr(b["name"]), string(in)
				}
			}
			return x
		}},
	{wireDialect{"responses", "/v1/responses",
		`{"model":"m",` + respTools + `,"tool_choice":{"type":"function","name":"get_weather"},"input":[{"role":"user","content":"weather?"}]}`,
		wireDialects[3].read},
		"max_output_tokens",
		func(m map[string]any) meaning {
			x := meaning{Finish: jstr(m["status"]), Usage: jnum(path(m, "usage", "output_tokens"))}
			for _, it := range m["output"].([]any) {
				switch it := jobj(it); jstr(it["type"]) {
				case "message":
					x.Text += jstr(path(it, "content", 0, "text"))
				case "function_call":
					x.Call, x.Args = jstr(it["name"]), jstr(it["arguments"])
				}
			}
			return x
		}},
}

// toolAnswer is one call's meaning, whole or streamed (under enc).
func toolAnswer(t *testing.T, url string, d toolDialect, stream bool, extra, enc string) meaning {
	t.Helper()
	hdr := []string{HeaderOutputTokens, "3", HeaderWords, "prompt"}
	if !stream {
		m := decode(t, postJSON(t, context.Background(), url+d.wire.path, d.body(false, extra), hdr...), http.StatusOK)
		return d.whole(m)
	}
	w := d.wire
	w.body = d.body(true, extra)
	m, _, _ := streamOf(t, url, w, enc, hdr...)
	m.End, m.Pings = false, 0
	return m
}

// A tool call counts its arguments' tokens (jsonTokens: eight bytes
// each), and max_tokens cuts it as a vendor's model is cut: in the text,
// no call; after the text, the call stopped mid-arguments with the
// length stop; the same whole and streamed.
func TestToolCallsFitMaxTokens(t *testing.T) {
	_, url := startMock(t, instant())
	finish := map[string][3]string{ // whole call, cut, no tools
		"chat":      {"tool_calls", "length", "stop"},
		"messages":  {"tool_use", "max_tokens", "end_turn"},
		"responses": {"completed", "incomplete", "completed"},
	}
	for _, d := range toolDialects {
		f := finish[d.wire.name]
		full := toolAnswer(t, url, d, false, "", "")
		if len(strings.Fields(full.Text)) != 3 || full.Call != "get_weather" || full.Args != wantArgs || full.Finish != f[0] || full.Usage != 3+5 {
			t.Fatalf("%s: whole call %+v", d.wire.name, full)
		}
		for _, c := range []struct {
			max          int
			args, finish string // args: whole-answer arguments ("-": no call)
			streamArgs   string
			usage        int
		}{
			{100, wantArgs, f[0], wantArgs, 8},
			{8, wantArgs, f[0], wantArgs, 8},
			{2, "-", f[1], "", 2},
			{3, "-", f[1], "", 3},
			{4, `{"city":`, f[1], `{"city":`, 4},
			{5, `{"city":"mock","`, f[1], `{"city":"mock","`, 5},
			{7, `{"city":"mock","days":1,"metric"`, f[1], `{"city":"mock","days":1,"metric"`, 7},
		} {
			want := meaning{Text: full.Text, Finish: c.finish, Usage: c.usage, Call: "get_weather", Args: c.args}
			if c.max < 3 {
				want.Text = " " + strings.Join(strings.Fields(full.Text)[:c.max], " ")
			}
			if c.args == "-" {
				want.Call, want.Args = "", ""
			}
			if d.wire.name == "messages" && c.max < 8 && c.args != "-" {
				// A whole message's tool_use input is an object: the
				// members whole when the cap came (partialObject).
				want.Args = map[int]string{4: `{}`, 5: `{"city":"mock"}`, 7: `{"city":"mock","days":1}`}[c.max]
			}
			extra := `"` + d.cap + `":` + jsonInt(c.max)
			if got := toolAnswer(t, url, d, false, extra, ""); got != want {
				t.Errorf("%s max %d whole:\n got %+v\nwant %+v", d.wire.name, c.max, got, want)
			}
			want.Args = c.streamArgs
			if c.args == "-" {
				want.Args = ""
			}
			if got := toolAnswer(t, url, d, true, extra, "compact"); got != want {
				t.Errorf("%s max %d streamed:\n got %+v\nwant %+v", d.wire.name, c.max, got, want)
			}
		}
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// Every encoding carries a tool call, whole or cut, as compact does.
func TestToolCallsUnderEveryEncoding(t *testing.T) {
	_, url := startMock(t, instant())
	encodings := append(sseenc.Words(), "pydefault+crlf", "pretty+noevent+cr", "shuffle+escaped+slashes+nospace+idretry+comments")
	for _, d := range toolDialects {
		for _, extra := range []string{"", `"` + d.cap + `":5`} {
			want := toolAnswer(t, url, d, true, extra, "compact")
			if want.Call != "get_weather" || want.Args == "" {
				t.Fatalf("%s %s compact: %+v", d.wire.name, extra, want)
			}
			for _, enc := range encodings {
				if got := toolAnswer(t, url, d, true, extra, enc); got != want {
					t.Errorf("%s %s %s:\n got %+v\nwant %+v", d.wire.name, extra, enc, got, want)
				}
			}
		}
	}
}

// A whole round trip in each API: the call, then its result sent back,
// which is answered with text and no call; tool_choice none calls
// nothing.
func TestToolRoundTrip(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	results := map[string]string{
		"chat": `{"model":"m",` + oaiTools + `,"messages":[{"role":"user","content":"weather?"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"sunny, 21C"}]}`,
		"messages": `{"model":"c","max_tokens":100,` + antTools + `,"messages":[{"role":"user","content":"weather?"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny, 21C"}]}]}]}`,
		"responses": `{"model":"m",` + respTools + `,"input":[{"role":"user","content":"weather?"},` +
			`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"call_1","output":"sunny, 21C"}]}`,
	}
	none := map[string][2]string{
		"chat":      {`"tool_choice":{"type":"function","function":{"name":"get_weather"}}`, `"tool_choice":"none"`},
		"messages":  {`"tool_choice":{"type":"tool","name":"get_weather"}`, `"tool_choice":{"type":"none"}`},
		"responses": {`"tool_choice":{"type":"function","name":"get_weather"}`, `"tool_choice":"none"`},
	}
	for _, d := range toolDialects {
		for _, stream := range []bool{false, true} {
			r := toolDialect{wireDialect{d.wire.name, d.wire.path, results[d.wire.name], d.wire.read}, d.cap, d.whole}
			got := toolAnswer(t, url, r, stream, "", "compact")
			if got.Call != "" || !strings.HasPrefix(got.Text, "tool result: sunny, 21C") || got.Finish == "" || strings.Contains(got.Finish, "tool") {
				t.Errorf("%s (stream %v): the answer to a tool result: %+v", d.wire.name, stream, got)
			}
			n := d
			n.wire.body = strings.Replace(d.wire.body, none[d.wire.name][0], none[d.wire.name][1], 1)
			if got := toolAnswer(t, url, n, stream, "", "compact"); got.Call != "" || got.Args != "" {
				t.Errorf("%s (stream %v): tool_choice none called %+v", d.wire.name, stream, got)
			}
		}
	}
	// Without tool_choice the first function is called: in the
	// Responses API not the built-in web_search before it.
	m := decode(t, postJSON(t, ctx, url+"/v1/responses", `{"model":"m",`+respTools+`,"input":"hi"}`), http.StatusOK)
	if path(m, "output", 1, "name") != "other" || path(m, "output", 1, "arguments") != "{}" {
		t.Errorf("the first function: %s", compact(t, m))
	}
}

// The chat stream's call, as OpenAI streams one: a head with index, id,
// type, name and empty arguments, then the arguments under the index.
func TestChatToolCallStreamShape(t *testing.T) {
	_, url := startMock(t, instant())
	resp := postJSON(t, context.Background(), url+"/v1/chat/completions", toolDialects[0].body(true, ""))
	evs, err := newSSE(resp.Body).all()
	if err != nil {
		t.Fatal(err)
	}
	var heads, pieces int
	for _, ev := range evs {
		if ev.data == "[DONE]" {
			continue
		}
		c := path(jsonOf(t, ev.data), "choices", 0, "delta", "tool_calls", 0)
		if c == nil {
			continue
		}
		if path(c, "index") != 0.0 {
			t.Errorf("a call chunk without index 0: %s", ev.data)
		}
		if path(c, "id") != nil {
			heads++
			if !strings.HasPrefix(path(c, "id").(string), "call_") || path(c, "type") != "function" || path(c, "function", "arguments") != "" {
				t.Errorf("head %s", ev.data)
			}
		} else {
			pieces++
		}
	}
	if heads != 1 || pieces != 5 {
		t.Errorf("%d heads, %d argument chunks; want 1 and 5", heads, pieces)
	}
}

// The Responses API's events for a call, in OpenAI's order, numbered.
func TestResponsesToolCallEvents(t *testing.T) {
	_, url := startMock(t, instant())
	for _, c := range []struct {
		extra, final, status string
	}{{"", "response.completed", "completed"}, {`"max_output_tokens":5`, "response.incomplete", "incomplete"}} {
		resp := postJSON(t, context.Background(), url+"/v1/responses", toolDialects[2].body(true, c.extra), HeaderOutputTokens, "3")
		evs, err := newSSE(resp.Body).all()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var args string
		for i, ev := range evs {
			d := jsonOf(t, ev.data)
			if d["type"] != ev.name || d["sequence_number"] != float64(i) {
				t.Errorf("event %d: %s %s", i, ev.name, ev.data)
			}
			switch ev.name {
			case "response.function_call_arguments.delta":
				args += d["delta"].(string)
				if d["item_id"] != "fc_"+strings.TrimPrefix(path(jsonOf(t, evs[0].data), "response", "id").(string), "resp_") || d["output_index"] != 1.0 {
					t.Errorf("delta %s", ev.data)
				}
				if names[len(names)-1] == ev.name {
					continue
				}
			case "response.output_text.delta":
				if names[len(names)-1] == ev.name {
					continue
				}
			case "response.function_call_arguments.done":
				if d["arguments"] != args {
					t.Errorf("done %s, deltas %q", ev.data, args)
				}
			case "response.output_item.done":
				if path(d, "item", "type") == "function_call" && (path(d, "item", "status") != c.status || path(d, "item", "arguments") != args || path(d, "item", "call_id") == "") {
					t.Errorf("item done %s", ev.data)
				}
			}
			names = append(names, ev.name)
		}
		want := "response.created response.in_progress response.output_item.added response.content_part.added " +
			"response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
			"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " + c.final
		if strings.Join(names, " ") != want {
			t.Errorf("%s: events\n%v\nwant\n%v", c.extra, strings.Join(names, " "), want)
		}
		last := jsonOf(t, evs[len(evs)-1].data)
		if path(last, "response", "status") != c.status || path(last, "response", "output", 1, "arguments") != args ||
			path(last, "response", "output", 0, "status") != "completed" || path(last, "response", "usage", "output_tokens") == nil {
			t.Errorf("final %s", evs[len(evs)-1].data)
		}
	}
}

func TestResponses(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	body := `{"model":"gpt-x","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"Hello there"}]}]}`
	m := decode(t, postJSON(t, ctx, url+"/v1/responses", body, "X-Mock-Output-Tokens", "4"), http.StatusOK)
	if m["object"] != "response" || m["status"] != "completed" || path(m, "output", 0, "content", 0, "type") != "output_text" ||
		strings.Count(path(m, "output", 0, "content", 0, "text").(string), " ") != 4 ||
		path(m, "usage", "input_tokens") != 5.0 || path(m, "usage", "output_tokens") != 4.0 || len(m["output"].([]any)) != 1 {
		t.Errorf("response %s", compact(t, m))
	}
	m = decode(t, postJSON(t, ctx, url+"/v1/responses", `{"model":"m","input":"hi","max_output_tokens":2}`, "X-Mock-Output-Tokens", "4"), http.StatusOK)
	if m["status"] != "incomplete" || path(m, "incomplete_details", "reason") != "max_output_tokens" || path(m, "output", 0, "status") != "incomplete" {
		t.Errorf("capped response %s", compact(t, m))
	}

	resp := postJSON(t, ctx, url+"/v1/responses", `{"model":"m","input":"hi","stream":true}`, "X-Mock-Output-Tokens", "3")
	evs, err := newSSE(resp.Body).all()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, ev := range evs {
		names = append(names, ev.name)
		d := jsonOf(t, ev.data)
		if d["type"] != ev.name || d["sequence_number"] != float64(i) || !strings.HasPrefix(ev.data, `{"type":"`) {
			t.Errorf("event %d: %s %s", i, ev.name, ev.data)
		}
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if strings.Join(names, " ") != want {
		t.Errorf("events %v", names)
	}
	last := jsonOf(t, evs[len(evs)-1].data)
	if path(last, "response", "usage", "output_tokens") != 3.0 ||
		path(last, "response", "output", 0, "content", 0, "text") != path(jsonOf(t, evs[len(evs)-4].data), "text") {
		t.Errorf("completed %s", evs[len(evs)-1].data)
	}
}

// text.format asks for JSON: json_schema gets a value of the schema,
// json_object {}, whole and streamed; the words of instructions and
// input are the prompt's.
func TestResponsesTextFormatAndPrompt(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	for format, want := range map[string]string{
		`{"type":"json_schema","name":"w","schema":` + weatherParams + `}`: wantArgs,
		`{"type":"json_object"}`: `{}`,
	} {
		body := `{"model":"m","text":{"format":` + format + `},"input":"weather?"}`
		m := decode(t, postJSON(t, ctx, url+"/v1/responses", body), http.StatusOK)
		if got := path(m, "output", 0, "content", 0, "text"); got != want {
			t.Errorf("%s: text %v, want %s", format, got, want)
		}
		d := wireDialects[3]
		d.body = `{"stream":true,` + body[1:]
		if got, raw, _ := streamOf(t, url, d, "spaced"); got.Text != want || got.Usage != len(jsonTokens(want)) {
			t.Errorf("%s streamed: %+v\n%s", format, got, raw)
		}
	}
	// instructions and input make the same prompt as a system message
	// and the user's in chat, so words: prompt draws the same words.
	chat := decode(t, postJSON(t, ctx, url+"/v1/chat/completions", `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}]}`, HeaderWords, "prompt"), http.StatusOK)
	resp := decode(t, postJSON(t, ctx, url+"/v1/responses", `{"model":"m","instructions":"Be brief.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Hello"}]}]}`, HeaderWords, "prompt"), http.StatusOK)
	if a, b := path(chat, "choices", 0, "message", "content"), path(resp, "output", 0, "content", 0, "text"); a != b {
		t.Errorf("words: prompt: chat %q, responses %q", a, b)
	}
}

func TestPartialObject(t *testing.T) {
	for sent, want := range map[string]string{
		"":                                   "{}",
		`{"city":"mo`:                        "{}",
		`{"city":"mock"`:                     `{"city":"mock"}`,
		`{"city":"mock","days":1,"metric":t`: `{"city":"mock","days":1}`,
		wantArgs:                             wantArgs,
	} {
		if got := partialObject(wantArgs, sent); got != want || !json.Valid([]byte(got)) {
			t.Errorf("%q: %s, want %s", sent, got, want)
		}
	}
	if got := partialObject(`"mock"`, `"mo`); got != "{}" {
		t.Errorf("not an object: %s", got)
	}
}

// A fault counts a call's arguments as tokens: eof:5 after three words
// ends a whole chat answer two pieces into the arguments, and a stream
// after the same two pieces.
func TestFaultInsideToolCall(t *testing.T) {
	_, url := startMock(t, instant())
	hdr := []string{HeaderOutputTokens, "3", HeaderFail, "eof:5"}
	resp := postJSON(t, context.Background(), url+"/v1/chat/completions", toolDialects[0].body(false, ""), hdr...)
	b, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasSuffix(string(b), `"arguments":"{\"city\":\"mock\",\"`) {
		t.Errorf("whole answer cut at %q (%v)", b, err)
	}
	d := toolDialects[0].wire
	d.body = toolDialects[0].body(true, "")
	m, raw, _ := streamOf(t, url, d, "compact", hdr...)
	if m.Call != "get_weather" || m.Args != `{"city":"mock","` || m.Finish != "" || m.End {
		t.Errorf("stream cut: %+v\n%s", m, raw)
	}
}

// A stall that ends a whole answer inside the call's arguments still
// sends the part of the body before the cut, in every API.
func TestStallCutInsideToolCall(t *testing.T) {
	_, url := startMock(t, instant())
	for _, d := range toolDialects {
		resp := postJSON(t, context.Background(), url+d.wire.path, d.body(false, ""), HeaderOutputTokens, "3", HeaderFail, "stall:5:1ms:eof")
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || len(b) < 20 || json.Valid(b) {
			t.Errorf("%s: %d %v: %q; want the body's first part", d.wire.name, resp.StatusCode, err, b)
		}
	}
}
