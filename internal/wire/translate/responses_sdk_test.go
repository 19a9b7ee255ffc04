package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// The Responses API's output is read back with the official OpenAI Go
// SDK's own types and client, so that what is checked is what a client
// of that API makes of it, not what this package thinks it wrote.

type sdkCall struct{ CallID, Name, Args string }

// sdkAnswer is what a client makes of a translated stream, read event by
// event with responses.ResponseStreamEventUnion.
type sdkAnswer struct {
	Text, Refusal string
	Calls         []sdkCall
	Terminal      string // response.completed, response.incomplete, error
	Final         *responses.Response
	Err           responses.ResponseErrorEvent
}

// readSDKStream reads events as the SDK does, and fails on anything out
// of the grammar's place: a sequence number out of order, a delta for an
// item that is not open, a .done whose text or arguments are not the
// deltas', a final response whose output is not the items done.
func readSDKStream(t *testing.T, events []Event) sdkAnswer {
	t.Helper()
	var a sdkAnswer
	type item struct {
		id, typ string
		parts   map[int64]*strings.Builder
		args    strings.Builder
		done    bool
		raw     string // the item at output_item.done
	}
	var items []*item
	open := func(oi int64, id string) *item {
		t.Helper()
		if oi < 0 || int(oi) >= len(items) || items[oi].done || (id != "" && items[oi].id != id) {
			t.Fatalf("output %d (item %q) is not open", oi, id)
		}
		return items[oi]
	}
	for i, ev := range events {
		if a.Terminal != "" {
			t.Fatalf("event %d (%s) after %s", i, ev.Name, a.Terminal)
		}
		var u responses.ResponseStreamEventUnion
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			t.Fatalf("event %d does not parse with the SDK: %v\n%s", i, err, ev.Data)
		}
		if u.Type != ev.Name {
			t.Fatalf("event %d: named %q, type %q", i, ev.Name, u.Type)
		}
		if u.SequenceNumber != int64(i) || !u.JSON.SequenceNumber.Valid() {
			t.Fatalf("event %d: sequence_number %d", i, u.SequenceNumber)
		}
		switch e := u.AsAny().(type) {
		case responses.ResponseCreatedEvent:
			if i != 0 || e.Response.Status != responses.ResponseStatusInProgress || len(e.Response.Output) != 0 || !strings.HasPrefix(e.Response.ID, "resp_") {
				t.Fatalf("event %d: response.created %s", i, ev.Data)
			}
		case responses.ResponseInProgressEvent:
			if i != 1 || e.Response.Status != responses.ResponseStatusInProgress {
				t.Fatalf("event %d: response.in_progress %s", i, ev.Data)
			}
		case responses.ResponseOutputItemAddedEvent:
			if int(e.OutputIndex) != len(items) || e.Item.Status != "in_progress" || e.Item.ID == "" {
				t.Fatalf("event %d: item added at %d with %d items: %s", i, e.OutputIndex, len(items), ev.Data)
			}
			for _, it := range items {
				if !it.done {
					t.Fatalf("event %d: an item added while %s is open", i, it.id)
				}
			}
			it := &item{id: e.Item.ID, typ: e.Item.Type, parts: map[int64]*strings.Builder{}}
			switch e.Item.Type {
			case "message":
				if m := e.Item.AsMessage(); len(m.Content) != 0 || m.Role != "assistant" {
					t.Fatalf("event %d: message added with content: %s", i, ev.Data)
				}
			case "function_call":
				fc := e.Item.AsFunctionCall()
				if fc.Arguments != "" || fc.Name == "" || fc.CallID == "" {
					t.Fatalf("event %d: function call added as %s", i, ev.Data)
				}
				a.Calls = append(a.Calls, sdkCall{CallID: fc.CallID, Name: fc.Name})
			default:
				t.Fatalf("event %d: an item of type %q", i, e.Item.Type)
			}
			items = append(items, it)
		case responses.ResponseContentPartAddedEvent:
			it := open(e.OutputIndex, e.ItemID)
			if int(e.ContentIndex) != len(it.parts) || e.Part.Text != "" || e.Part.Refusal != "" {
				t.Fatalf("event %d: part added: %s", i, ev.Data)
			}
			it.parts[e.ContentIndex] = &strings.Builder{}
		case responses.ResponseTextDeltaEvent:
			it := open(e.OutputIndex, e.ItemID)
			it.parts[e.ContentIndex].WriteString(e.Delta)
			a.Text += e.Delta
		case responses.ResponseRefusalDeltaEvent:
			it := open(e.OutputIndex, e.ItemID)
			it.parts[e.ContentIndex].WriteString(e.Delta)
			a.Refusal += e.Delta
		case responses.ResponseTextDoneEvent:
			if it := open(e.OutputIndex, e.ItemID); e.Text != it.parts[e.ContentIndex].String() {
				t.Fatalf("event %d: text done %q, deltas %q", i, e.Text, it.parts[e.ContentIndex].String())
			}
		case responses.ResponseRefusalDoneEvent:
			if it := open(e.OutputIndex, e.ItemID); e.Refusal != it.parts[e.ContentIndex].String() {
				t.Fatalf("event %d: refusal done %q, deltas %q", i, e.Refusal, it.parts[e.ContentIndex].String())
			}
		case responses.ResponseContentPartDoneEvent:
			it := open(e.OutputIndex, e.ItemID)
			if got := e.Part.Text + e.Part.Refusal; got != it.parts[e.ContentIndex].String() {
				t.Fatalf("event %d: part done %q, deltas %q", i, got, it.parts[e.ContentIndex].String())
			}
		case responses.ResponseFunctionCallArgumentsDeltaEvent:
			it := open(e.OutputIndex, e.ItemID)
			it.args.WriteString(e.Delta)
			a.Calls[len(a.Calls)-1].Args += e.Delta
		case responses.ResponseFunctionCallArgumentsDoneEvent:
			if it := open(e.OutputIndex, e.ItemID); e.Arguments != it.args.String() {
				t.Fatalf("event %d: arguments done %q, deltas %q", i, e.Arguments, it.args.String())
			}
		case responses.ResponseOutputItemDoneEvent:
			it := open(e.OutputIndex, e.Item.ID)
			switch e.Item.Type {
			case "message":
				m := e.Item.AsMessage()
				if len(m.Content) != len(it.parts) {
					t.Fatalf("event %d: message done with %d parts, %d streamed", i, len(m.Content), len(it.parts))
				}
				for ci, c := range m.Content {
					if got := c.Text + c.Refusal; got != it.parts[int64(ci)].String() {
						t.Fatalf("event %d: part %d done %q, streamed %q", i, ci, got, it.parts[int64(ci)].String())
					}
				}
			case "function_call":
				if fc := e.Item.AsFunctionCall(); fc.Arguments != it.args.String() {
					t.Fatalf("event %d: call done with %q, streamed %q", i, fc.Arguments, it.args.String())
				}
			}
			it.done, it.raw = true, e.Item.RawJSON()
		case responses.ResponseCompletedEvent, responses.ResponseIncompleteEvent:
			a.Terminal = u.Type
			r := u.Response
			a.Final = &r
			if len(r.Output) != len(items) {
				t.Fatalf("event %d: %d items in the response, %d streamed", i, len(r.Output), len(items))
			}
			for oi, o := range r.Output {
				if !items[oi].done {
					t.Fatalf("event %d: item %d never done", i, oi)
				}
				sameJSON(t, []byte(o.RawJSON()), []byte(items[oi].raw))
			}
			if r.OutputText() != a.Text {
				t.Fatalf("event %d: OutputText %q, streamed %q", i, r.OutputText(), a.Text)
			}
		case responses.ResponseErrorEvent:
			a.Terminal, a.Err = "error", e
		default:
			t.Fatalf("event %d: unexpected %T", i, e)
		}
	}
	return a
}

type usageWant struct{ In, Cached, Out, Reasoning, Total int64 }

func usageOf(r responses.Response) usageWant {
	u := r.Usage
	return usageWant{u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens, u.OutputTokensDetails.ReasoningTokens, u.TotalTokens}
}

var sdkStreamWants = map[string]struct {
	text, refusal string
	calls         []sdkCall
	terminal      string
	status        responses.ResponseStatus
	reason        string
	usage         usageWant
	errCode       string
}{
	"text":            {text: "Hello there, \"friend\"\n", terminal: "response.completed", status: "completed", usage: usageWant{19, 0, 4, 0, 23}},
	"tool_calls":      {calls: []sdkCall{{"call_abc", "get_weather", `{"city":"Oslo"}`}, {"call_def", "get_weather", `{"city":"Bergen"}`}}, terminal: "response.completed", status: "completed", usage: usageWant{120, 64, 40, 12, 160}},
	"text_then_tool":  {text: "Let me look.", calls: []sdkCall{{"toolu_01", "lookup", `{"q": "x"}`}}, terminal: "response.completed", status: "completed", usage: usageWant{50, 0, 9, 0, 59}},
	"refusal":         {refusal: "I can't help with that.", terminal: "response.completed", status: "completed", usage: usageWant{12, 0, 7, 0, 19}},
	"length":          {text: "Once upon a", terminal: "response.incomplete", status: "incomplete", reason: "max_output_tokens", usage: usageWant{8, 0, 3, 0, 11}},
	"empty":           {terminal: "response.completed", status: "completed"},
	"error_midstream": {text: "Partial", terminal: "error", errCode: "server_error"},
	"error_first":     {terminal: "error", errCode: "rate_limit_exceeded"},
}

func goldenStreamNames(t *testing.T) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("testdata", "responsesapi", "streams", "*.in.sse"))
	var names []string
	for _, p := range paths {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".in.sse"))
	}
	if len(names) != len(sdkStreamWants) {
		t.Fatalf("%d golden streams, %d expectations", len(names), len(sdkStreamWants))
	}
	return names
}

func translateResponsesStream(t *testing.T, in []byte) ([]Event, error) {
	t.Helper()
	events, _ := ParseEvents(in)
	s := NewStreamToResponses(StreamConfig{Created: goldenCreated})
	var out []Event
	for _, ev := range events {
		o, err := s.Feed(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o...)
	}
	return out, s.Close()
}

func TestResponsesStreamsReadBySDK(t *testing.T) {
	for _, name := range goldenStreamNames(t) {
		t.Run(name, func(t *testing.T) {
			want := sdkStreamWants[name]
			out, closeErr := translateResponsesStream(t, readGolden(t, "responsesapi/streams/"+name+".in.sse"))
			a := readSDKStream(t, out)
			if a.Text != want.text || a.Refusal != want.refusal || a.Terminal != want.terminal {
				t.Errorf("text %q refusal %q terminal %s, want %q %q %s", a.Text, a.Refusal, a.Terminal, want.text, want.refusal, want.terminal)
			}
			if !slices.Equal(a.Calls, want.calls) {
				t.Errorf("calls %q, want %q", a.Calls, want.calls)
			}
			if want.terminal == "error" {
				if !errors.Is(closeErr, ErrStreamFailed) || a.Err.Code != want.errCode || a.Err.Message == "" {
					t.Errorf("Close %v, error event %+v", closeErr, a.Err)
				}
				return
			}
			if closeErr != nil {
				t.Errorf("Close: %v", closeErr)
			}
			r := a.Final
			if r.Status != want.status || r.IncompleteDetails.Reason != want.reason || usageOf(*r) != want.usage {
				t.Errorf("status %q reason %q usage %+v, want %q %q %+v", r.Status, r.IncompleteDetails.Reason, usageOf(*r), want.status, want.reason, want.usage)
			}
			for i, o := range r.Output {
				if o.Type == "function_call" {
					if fc := o.AsFunctionCall(); fc.Arguments != want.calls[len(want.calls)-len(r.Output)+i].Args {
						t.Errorf("final call %d: arguments %q", i, fc.Arguments)
					}
				}
			}
			if !r.JSON.CreatedAt.Valid() || !r.JSON.Model.Valid() || r.Model == "" || r.Object != "response" {
				t.Errorf("response lacks its created_at, model or object: %s", r.RawJSON())
			}
			// The gateway's own Responses stream check takes it as whole.
			check := protocol.NewStreamCheckFor(protocol.Responses, protocol.OpenAI)
			if _, ok, _ := check.Feed(Encode(out)); !ok {
				t.Fatal("StreamCheck: malformed")
			}
			if v := check.End(); v != protocol.StreamOK {
				t.Errorf("StreamCheck = %q", v)
			}
		})
	}
}

// A chat stream may be written in any legal encoding; the same events
// must come out: JSON pretty-printed over several data: lines, keys in
// another order, CRLF or CR line ends, comments between events, data:
// without its space.
func TestResponsesStreamEncodings(t *testing.T) {
	for _, name := range goldenStreamNames(t) {
		in := readGolden(t, "responsesapi/streams/"+name+".in.sse")
		want, wantErr := translateResponsesStream(t, in)
		events, _ := ParseEvents(in)
		variants := map[string][]byte{
			"pretty":    reencode(t, events, func(d []byte) []byte { var b bytes.Buffer; _ = json.Indent(&b, d, "", "  "); return b.Bytes() }),
			"reordered": reencode(t, events, func(d []byte) []byte { return reversedKeys(t, d) }),
			// Tabs and spaces between every token, on one line: a raw
			// newline in JSON is only ever whitespace between tokens.
			"spaced": reencode(t, events, func(d []byte) []byte {
				var b bytes.Buffer
				_ = json.Indent(&b, reversedKeys(t, d), " ", "\t")
				return bytes.ReplaceAll(b.Bytes(), []byte("\n"), []byte(" "))
			}),
			"crlf":     bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n")),
			"cr":       bytes.ReplaceAll(in, []byte("\n"), []byte("\r")),
			"comments": bytes.ReplaceAll(bytes.ReplaceAll(in, []byte("data: "), []byte(": keepalive\ndata:")), []byte("\n\n"), []byte("\n\n: ping\n\n")),
		}
		for vname, v := range variants {
			t.Run(name+"/"+vname, func(t *testing.T) {
				got, err := translateResponsesStream(t, v)
				if !errors.Is(err, wantErr) && err != wantErr {
					t.Errorf("Close %v, want %v", err, wantErr)
				}
				if !bytes.Equal(Encode(got), Encode(want)) {
					t.Errorf("got\n%s\nwant\n%s\nfrom\n%q", Encode(got), Encode(want), v)
				}
			})
		}
	}
}

// reencode writes events again, each JSON data rewritten by f (and [DONE]
// as it is).
func reencode(t *testing.T, events []Event, f func([]byte) []byte) []byte {
	t.Helper()
	var out []byte
	for _, ev := range events {
		d := ev.Data
		if !bytes.Equal(d, doneData) {
			d = f(d)
			if !json.Valid(d) {
				t.Fatalf("a re-encoding is not JSON: %s", d)
			}
		}
		out = AppendEvent(out, Event{Name: ev.Name, Data: d})
	}
	return out
}

// reversedKeys writes JSON with every object's keys in reverse order.
func reversedKeys(t *testing.T, data []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	var write func(any)
	write = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Sort(sort.Reverse(sort.StringSlice(keys)))
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteByte(':')
				write(x[k])
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					b.WriteByte(',')
				}
				write(e)
			}
			b.WriteByte(']')
		default:
			eb, _ := json.Marshal(x)
			b.Write(eb)
		}
	}
	write(v)
	return b.Bytes()
}

func TestChatToResponseReadBySDK(t *testing.T) {
	for _, tc := range []struct {
		name, text, refusal string
		calls               []sdkCall
		status              responses.ResponseStatus
		reason              string
		usage               usageWant
	}{
		{"text", "Hello! How can I help?", "", nil, "completed", "", usageWant{19, 0, 10, 0, 29}},
		{"tool_calls", "Let me check both.", "", []sdkCall{{"call_abc", "get_weather", `{"city":"Oslo"}`}, {"call_def", "get_weather", `{"city":"Bergen"}`}}, "completed", "", usageWant{120, 64, 40, 12, 160}},
		{"tool_only", "", "", []sdkCall{{"toolu_01", "lookup", `{}`}}, "completed", "", usageWant{50, 0, 9, 0, 59}},
		{"refusal", "", "I can't help with that.", nil, "completed", "", usageWant{12, 0, 7, 0, 19}},
		{"length", "Once upon a", "", nil, "incomplete", "max_output_tokens", usageWant{8, 0, 3, 0, 11}},
		{"content_filter", "I won't write that.", "", nil, "incomplete", "content_filter", usageWant{30, 20, 6, 0, 36}},
		{"empty", "", "", nil, "completed", "", usageWant{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := ChatToResponse(readGolden(t, "responsesapi/answers/"+tc.name+".in.json"), goldenCreated)
			if err != nil {
				t.Fatal(err)
			}
			var r responses.Response
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatalf("the SDK cannot read it: %v", err)
			}
			for field, ok := range map[string]bool{
				"id": r.JSON.ID.Valid(), "created_at": r.JSON.CreatedAt.Valid(), "model": r.JSON.Model.Valid(),
				"output": r.JSON.Output.Valid(), "tool_choice": r.JSON.ToolChoice.Valid(), "tools": r.JSON.Tools.Valid(),
				"parallel_tool_calls": r.JSON.ParallelToolCalls.Valid(), "status": r.JSON.Status.Valid(),
			} {
				if !ok {
					t.Errorf("%s is missing or null", field)
				}
			}
			if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.CreatedAt == 0 {
				t.Errorf("id %q object %q created_at %v", r.ID, r.Object, r.CreatedAt)
			}
			if r.OutputText() != tc.text || r.Status != tc.status || r.IncompleteDetails.Reason != tc.reason || usageOf(r) != tc.usage {
				t.Errorf("text %q status %q reason %q usage %+v", r.OutputText(), r.Status, r.IncompleteDetails.Reason, usageOf(r))
			}
			var refusal string
			var calls []sdkCall
			for _, o := range r.Output {
				switch o.Type {
				case "message":
					for _, c := range o.AsMessage().Content {
						refusal += c.Refusal
					}
				case "function_call":
					fc := o.AsFunctionCall()
					if !strings.HasPrefix(fc.ID, "fc_") {
						t.Errorf("call id %q", fc.ID)
					}
					calls = append(calls, sdkCall{fc.CallID, fc.Name, fc.Arguments})
				default:
					t.Errorf("an output item of type %q", o.Type)
				}
			}
			if refusal != tc.refusal || !slices.Equal(calls, tc.calls) {
				t.Errorf("refusal %q calls %q, want %q %q", refusal, calls, tc.refusal, tc.calls)
			}
		})
	}
}

// The SDK's own client, unchanged, against a server that answers
// through the three translations: its request is translated to chat,
// and a chat answer (whole, then streamed) back to the Responses API.
func TestResponsesSDKClientRoundTrip(t *testing.T) {
	answer := readGolden(t, "responsesapi/answers/tool_calls.in.json")
	chunks := readGolden(t, "responsesapi/streams/text_then_tool.in.sse")
	var mu sync.Mutex
	var chatBodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tr, err := ResponsesToChat(body, Options{})
		if err != nil {
			http.Error(w, fmt.Sprintf(`{"error":{"message":%q,"type":"invalid_request_error"}}`, err), http.StatusBadRequest)
			return
		}
		mu.Lock()
		chatBodies = append(chatBodies, tr.Body)
		mu.Unlock()
		if !tr.Stream {
			out, err := ChatToResponse(answer, 1)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(out)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		events, _ := ParseEvents(chunks)
		s := NewStreamToResponses(StreamConfig{Created: 1})
		for _, ev := range events {
			out, err := s.Feed(ev)
			if err != nil {
				return
			}
			_, _ = w.Write(Encode(out))
		}
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))

	var schema map[string]any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`), &schema)
	output := responses.ResponseInputItemParamOfFunctionCallOutput("4°C")
	output.OfFunctionCallOutput.CallID = openai.String("call_1")
	params := responses.ResponseNewParams{
		Model:        "gpt-4.1",
		Instructions: openai.String("Be terse."),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Weather in Oslo?", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfFunctionCall(`{"city":"Oslo"}`, "call_1", "get_weather"),
			output,
		}},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
			Name: "get_weather", Parameters: schema, Strict: openai.Bool(true), Description: openai.String("Weather."),
		}}},
		ToolChoice:      responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
		MaxOutputTokens: openai.Int(100),
		Temperature:     openai.Float(0.5),
		Store:           openai.Bool(false),
	}

	resp, err := client.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Let me check both." || len(resp.Output) != 3 || resp.Output[2].AsFunctionCall().Arguments != `{"city":"Bergen"}` || resp.Usage.TotalTokens != 160 {
		t.Errorf("whole answer as the SDK reads it: %s", resp.RawJSON())
	}

	stream := client.Responses.NewStreaming(t.Context(), params)
	var events []Event
	for stream.Next() {
		ev := stream.Current()
		events = append(events, Event{Name: ev.Type, Data: []byte(ev.RawJSON())})
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	a := readSDKStream(t, events)
	if a.Terminal != "response.completed" || a.Text != "Let me look." || len(a.Calls) != 1 || a.Calls[0].Args != `{"q": "x"}` || a.Final.Usage.InputTokens != 50 {
		t.Errorf("streamed answer as the SDK reads it: %+v", a)
	}

	// What the target got: a chat request carrying the SDK's request.
	mu.Lock()
	defer mu.Unlock()
	if len(chatBodies) != 2 {
		t.Fatalf("%d chat requests", len(chatBodies))
	}
	var chat struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCalls  []oaToolCallIn  `json:"tool_calls"`
			ToolCallID string          `json:"tool_call_id"`
		} `json:"messages"`
		Tools               []oaTool        `json:"tools"`
		ToolChoice          json.RawMessage `json:"tool_choice"`
		MaxCompletionTokens int64           `json:"max_completion_tokens"`
		Stream              bool            `json:"stream"`
		StreamOptions       *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(chatBodies[1], &chat); err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, m := range chat.Messages {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "tool"}) || chat.Messages[2].ToolCalls[0].ID != "call_1" || chat.Messages[3].ToolCallID != "call_1" {
		t.Errorf("messages %s", chatBodies[1])
	}
	if len(chat.Tools) != 1 || !chat.Tools[0].Function.Strict || chat.MaxCompletionTokens != 100 || !chat.Stream || chat.StreamOptions == nil || !chat.StreamOptions.IncludeUsage {
		t.Errorf("chat request %s", chatBodies[1])
	}
	sameJSON(t, chat.ToolChoice, []byte(`{"type":"function","function":{"name":"get_weather"}}`))
}
