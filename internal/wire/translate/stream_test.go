package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func feedAll(t *testing.T, s Stream, events []Event) []Event {
	t.Helper()
	var out []Event
	for _, ev := range events {
		o, err := s.Feed(ev)
		if err != nil {
			t.Fatalf("Feed(%s %s): %v", ev.Name, ev.Data, err)
		}
		out = append(out, o...)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return out
}

// answer is what a client makes of a stream.
type answer struct {
	Text                string
	Tools               []toolCall
	Stop                string
	In, Out, CacheReads int64
	Terminated, Errored bool
}

type toolCall struct{ ID, Name, Args string }

// assembleAnthropic reads an Anthropic stream as a strict client would,
// and fails on any event out of its place.
func assembleAnthropic(t *testing.T, events []Event) answer {
	t.Helper()
	a, err := anthropicAnswer(events)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func anthropicAnswer(events []Event) (answer, error) {
	var a answer
	started, open, next := false, -1, 0
	isTool := map[int]bool{}
	for i, ev := range events {
		var in anEventIn
		if err := json.Unmarshal(ev.Data, &in); err != nil {
			return a, fmt.Errorf("event %d: data not JSON: %s", i, ev.Data)
		}
		if in.Type != ev.Name {
			return a, fmt.Errorf("event %d: named %q, type %q", i, ev.Name, in.Type)
		}
		if a.Terminated || a.Errored {
			return a, fmt.Errorf("event %d: %s after the end", i, in.Type)
		}
		if !started && in.Type != "message_start" && in.Type != "error" {
			return a, fmt.Errorf("event %d: %s before message_start", i, in.Type)
		}
		switch in.Type {
		case "message_start":
			if started {
				return a, fmt.Errorf("event %d: second message_start", i)
			}
			started = true
			a.In = in.Message.Usage.InputTokens
		case "content_block_start":
			if a.Stop != "" {
				return a, fmt.Errorf("event %d: a block after message_delta", i)
			}
			if open >= 0 || *in.Index != next {
				return a, fmt.Errorf("event %d: block %d starts with %d open, %d next", i, *in.Index, open, next)
			}
			open = *in.Index
			next++
			if in.ContentBlock.Type == "tool_use" {
				isTool[open] = true
				a.Tools = append(a.Tools, toolCall{ID: in.ContentBlock.ID, Name: in.ContentBlock.Name})
			}
		case "content_block_delta":
			if *in.Index != open {
				return a, fmt.Errorf("event %d: delta for block %d, %d open", i, *in.Index, open)
			}
			switch {
			case in.Delta.Type == "text_delta" && !isTool[open]:
				a.Text += in.Delta.Text
			case in.Delta.Type == "input_json_delta" && isTool[open]:
				a.Tools[len(a.Tools)-1].Args += in.Delta.PartialJSON
			default:
				return a, fmt.Errorf("event %d: %s in block %d", i, in.Delta.Type, open)
			}
		case "content_block_stop":
			if *in.Index != open {
				return a, fmt.Errorf("event %d: stop for block %d, %d open", i, *in.Index, open)
			}
			open = -1
		case "message_delta":
			if open >= 0 {
				return a, fmt.Errorf("event %d: message_delta with block %d open", i, open)
			}
			a.Stop = *in.Delta.StopReason
			if u := in.Usage; u != nil {
				if u.InputTokens != nil {
					a.In = *u.InputTokens
				}
				a.Out = deref(u.OutputTokens)
				a.CacheReads = deref(u.CacheReadInputTokens)
			}
		case "message_stop":
			if a.Stop == "" {
				return a, fmt.Errorf("event %d: message_stop before message_delta", i)
			}
			a.Terminated = true
		case "error":
			a.Errored = true
		}
	}
	for i := range a.Tools {
		a.Tools[i].Args = compactJSON(a.Tools[i].Args)
	}
	return a, nil
}

// assembleOpenAI reads an OpenAI chunk stream as a strict client would.
func assembleOpenAI(t *testing.T, events []Event) answer {
	t.Helper()
	a, err := openAIAnswer(events)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func openAIAnswer(events []Event) (answer, error) {
	var a answer
	for i, ev := range events {
		if a.Terminated || a.Errored {
			return a, fmt.Errorf("event %d after the end", i)
		}
		if ev.Name != "" {
			return a, fmt.Errorf("event %d: OpenAI events have no name, got %q", i, ev.Name)
		}
		if bytes.Equal(ev.Data, doneData) {
			if a.Stop == "" {
				return a, fmt.Errorf("event %d: [DONE] before finish_reason", i)
			}
			a.Terminated = true
			continue
		}
		var in oaChunkIn
		if err := json.Unmarshal(ev.Data, &in); err != nil {
			return a, fmt.Errorf("event %d: data not JSON: %s", i, ev.Data)
		}
		if in.Error != nil {
			a.Errored = true
			continue
		}
		for _, ch := range in.Choices {
			if a.Stop != "" && (ch.Delta.Content != nil && *ch.Delta.Content != "" || len(ch.Delta.ToolCalls) > 0) {
				return a, fmt.Errorf("event %d: content after finish_reason", i)
			}
			if ch.Delta.Content != nil {
				a.Text += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				switch {
				case tc.Index == len(a.Tools) && tc.ID != "" && tc.Function.Name != nil:
					a.Tools = append(a.Tools, toolCall{ID: tc.ID, Name: *tc.Function.Name, Args: tc.Function.Arguments})
				case tc.Index == len(a.Tools)-1 && tc.ID == "":
					a.Tools[tc.Index].Args += tc.Function.Arguments
				default:
					return a, fmt.Errorf("event %d: tool call %d out of order", i, tc.Index)
				}
			}
			if ch.FinishReason != nil {
				if a.Stop != "" {
					return a, fmt.Errorf("event %d: second finish_reason", i)
				}
				a.Stop = *ch.FinishReason
			}
		}
		if u := in.Usage; u != nil {
			a.In, a.Out = u.PromptTokens, u.CompletionTokens
			if u.PromptTokensDetails != nil {
				a.CacheReads = u.PromptTokensDetails.CachedTokens
			}
		}
	}
	for i := range a.Tools {
		a.Tools[i].Args = compactJSON(a.Tools[i].Args)
	}
	return a, nil
}

func compactJSON(s string) string {
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(s)) != nil {
		return s
	}
	return buf.String()
}

// The translated golden streams pass the gateway's own stream check for
// the client's dialect: whole events, JSON data, the right terminator.
func TestGoldenStreamsPassStreamCheck(t *testing.T) {
	for _, dir := range []string{"to_openai", "to_anthropic"} {
		ins, _ := filepath.Glob(filepath.Join("testdata", "streams", dir, "*.in.sse"))
		for _, p := range ins {
			name := filepath.Base(p)
			t.Run(dir+"/"+name, func(t *testing.T) {
				events, _ := ParseEvents(readGolden(t, filepath.Join("streams", dir, name)))
				var s Stream = NewStreamToAnthropic()
				client := protocol.Anthropic
				if dir == "to_openai" {
					s, client = NewStreamToOpenAI(StreamConfig{IncludeUsage: true}), protocol.OpenAI
				}
				var out []Event
				for _, ev := range events {
					o, err := s.Feed(ev)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, o...)
				}
				check := protocol.NewStreamCheck(client)
				if _, ok, _ := check.Feed(Encode(out)); !ok {
					t.Fatalf("malformed output")
				}
				want := protocol.StreamOK
				if strings.HasPrefix(name, "error") {
					want = protocol.StreamErrorEvent
				}
				if got := check.End(); got != want {
					t.Errorf("StreamCheck = %q, want %q", got, want)
				}
			})
		}
	}
}

// Streams cut short, or broken, never end with a terminator the client
// would take for a whole answer.
func TestStreamEdges(t *testing.T) {
	anEvents, _ := ParseEvents(readGolden(t, "streams/to_openai/tool_use.in.sse"))
	oaEvents, _ := ParseEvents(readGolden(t, "streams/to_anthropic/tool_calls.in.sse"))

	feed := func(s Stream, events []Event) ([]Event, error) {
		var out []Event
		for _, ev := range events {
			o, err := s.Feed(ev)
			if err != nil {
				return out, err
			}
			out = append(out, o...)
		}
		return out, nil
	}
	t.Run("anthropic cut at every point", func(t *testing.T) {
		for cut := 0; cut < len(anEvents); cut++ {
			s := NewStreamToOpenAI(StreamConfig{IncludeUsage: true})
			out, err := feed(s, anEvents[:cut])
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			if err := s.Close(); !errors.Is(err, ErrTruncated) {
				t.Errorf("cut %d: Close = %v, want ErrTruncated", cut, err)
			}
			if a, err := openAIAnswer(out); err != nil || a.Terminated {
				t.Errorf("cut %d: %v, terminated %v", cut, err, a.Terminated)
			}
		}
	})
	t.Run("openai cut at every point", func(t *testing.T) {
		for cut := 0; cut < len(oaEvents); cut++ {
			s := NewStreamToAnthropic()
			out, err := feed(s, oaEvents[:cut])
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			if err := s.Close(); !errors.Is(err, ErrTruncated) {
				t.Errorf("cut %d: Close = %v, want ErrTruncated", cut, err)
			}
			a, err := anthropicAnswer(out)
			if err != nil || a.Terminated || a.Stop != "" {
				t.Errorf("cut %d: %v, terminated %v, stop %q", cut, err, a.Terminated, a.Stop)
			}
		}
	})
	t.Run("events after the end are ignored", func(t *testing.T) {
		s := NewStreamToOpenAI(StreamConfig{})
		if _, err := feed(s, anEvents); err != nil {
			t.Fatal(err)
		}
		if out, err := s.Feed(anEvents[3]); out != nil || err != nil {
			t.Errorf("after message_stop: %v, %v", out, err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	broken := []struct {
		name   string
		s      func() Stream
		events []string // data lines; "name|data" gives an event name
	}{
		{"anthropic data not JSON", toOA, []string{"message_start|{"}},
		{"anthropic delta before message_start", toOA, []string{`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}},
		{"anthropic delta for a block never started", toOA, []string{anStart, `content_block_delta|{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`}},
		{"anthropic delta after its block stopped", toOA, []string{anStart, anText0, `content_block_stop|{"type":"content_block_stop","index":0}`, `content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}},
		{"anthropic json delta in a text block", toOA, []string{anStart, anText0, `content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}`}},
		{"anthropic server tool block", toOA, []string{anStart, `content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web_search","input":{}}}`}},
		{"anthropic block started twice", toOA, []string{anStart, anText0, anText0}},
		{"anthropic message_stop without stop reason", toOA, []string{anStart, `message_stop|{"type":"message_stop"}`}},
		{"openai chunk not JSON", toAN, []string{`{"id":`}},
		{"openai second choice", toAN, []string{`{"id":"c","choices":[{"index":1,"delta":{"content":"x"}}]}`}},
		{"openai done without finish", toAN, []string{`{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}`, `[DONE]`}},
		{"openai tool call resumed", toAN, []string{
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":""}}]}}]}`,
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":""}}]}}]}`,
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`}},
		{"anthropic content after message_delta", toOA, []string{anStart, `message_delta|{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`, anText0}},
		{"openai content after finish_reason", toAN, []string{`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `{"id":"c","choices":[{"index":0,"delta":{"content":"late"}}]}`}},
		{"openai tool call without a name", toAN, []string{`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"arguments":"{"}}]}}]}`}},
	}
	for _, tc := range broken {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s()
			var err error
			var out []Event
			for _, line := range tc.events {
				ev := Event{Data: []byte(line)}
				if name, data, ok := strings.Cut(line, "|"); ok {
					ev = Event{Name: name, Data: []byte(data)}
				}
				var o []Event
				if o, err = s.Feed(ev); err != nil {
					break
				}
				out = append(out, o...)
			}
			if !errors.Is(err, ErrResponse) {
				t.Fatalf("Feed = %v, want ErrResponse", err)
			}
			if o, again := s.Feed(Event{Data: []byte(`{}`)}); o != nil || !errors.Is(again, ErrResponse) {
				t.Errorf("Feed after failing = %v, %v", o, again)
			}
			if c := s.Close(); !errors.Is(c, ErrResponse) {
				t.Errorf("Close = %v, want the Feed error", c)
			}
			for _, ev := range out {
				if bytes.Equal(ev.Data, doneData) || ev.Name == "message_stop" {
					t.Errorf("a broken stream emitted its terminator")
				}
			}
		})
	}
	t.Run("anthropic unknown event type is skipped", func(t *testing.T) {
		s := NewStreamToOpenAI(StreamConfig{})
		out, err := s.Feed(Event{Name: "future_thing", Data: []byte(`{"type":"future_thing"}`)})
		if out != nil || err != nil {
			t.Errorf("%v, %v", out, err)
		}
	})
	t.Run("anthropic error before message_start", func(t *testing.T) {
		s := NewStreamToOpenAI(StreamConfig{})
		out, err := s.Feed(Event{Name: "error", Data: []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)})
		if err != nil || len(out) != 1 {
			t.Fatalf("%s, %v", Encode(out), err)
		}
		sameJSON(t, out[0].Data, []byte(`{"error":{"message":"slow down","type":"rate_limit_exceeded","param":null,"code":null}}`))
		if c := s.Close(); !errors.Is(c, ErrStreamFailed) {
			t.Errorf("Close = %v", c)
		}
	})
	t.Run("openai empty answer", func(t *testing.T) {
		s := NewStreamToAnthropic()
		out := feedAll(t, s, []Event{
			{Data: []byte(`{"id":"c","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`)},
			{Data: doneData},
		})
		a := assembleAnthropic(t, out)
		if !a.Terminated || a.Stop != "end_turn" || a.Text != "" {
			t.Errorf("%+v", a)
		}
	})
	t.Run("openai content and finish in one chunk, usage with it", func(t *testing.T) {
		s := NewStreamToAnthropic()
		out := feedAll(t, s, []Event{
			{Data: []byte(`{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"all"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)},
			{Data: doneData},
		})
		a := assembleAnthropic(t, out)
		if a.Text != "all" || a.Stop != "max_tokens" || a.In != 3 || a.Out != 1 {
			t.Errorf("%+v", a)
		}
	})
	t.Run("openai refusal", func(t *testing.T) {
		s := NewStreamToAnthropic()
		out := feedAll(t, s, []Event{
			{Data: []byte(`{"id":"c","model":"m","choices":[{"index":0,"delta":{"refusal":"I can't help with that."},"finish_reason":null}]}`)},
			{Data: []byte(`{"id":"c","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)},
			{Data: doneData},
		})
		if a := assembleAnthropic(t, out); a.Stop != "refusal" || a.Text != "I can't help with that." {
			t.Errorf("%+v", a)
		}
	})
	t.Run("openai tool call without an id gets one", func(t *testing.T) {
		s := NewStreamToAnthropic()
		out := feedAll(t, s, []Event{
			{Data: []byte(`{"id":"c9","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}}]}`)},
			{Data: []byte(`{"id":"c9","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)},
			{Data: doneData},
		})
		a := assembleAnthropic(t, out)
		if len(a.Tools) != 1 || a.Tools[0].ID != "toolu_c9_0" {
			t.Errorf("%+v", a)
		}
	})
}

const (
	anStart = `message_start|{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`
	anText0 = `content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
)

func toOA() Stream { return NewStreamToOpenAI(StreamConfig{IncludeUsage: true}) }
func toAN() Stream { return NewStreamToAnthropic() }
