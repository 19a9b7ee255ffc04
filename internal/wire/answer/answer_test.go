package answer

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/sseenc"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// The recorded vendor streams the protocol package reads (hostile text,
// escapes, tool calls), and vendors' whole answers.
var streams = []struct {
	file string
	d    protocol.Dialect
}{
	{"../protocol/testdata/streams/openai_chat.sse", protocol.OpenAI},
	{"../protocol/testdata/streams/openai_tools.sse", protocol.OpenAI},
	{"../protocol/testdata/streams/anthropic.sse", protocol.Anthropic},
}

var wholes = []struct {
	name string
	d    protocol.Dialect
	body string
}{
	{"openai text", protocol.OpenAI, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello \"wörld\" 😀\ndata: [DONE]","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":4}},"service_tier":"default","system_fingerprint":"fp_1"}`},
	{"openai tools, two choices", protocol.OpenAI, `{"id":"chatcmpl-2","object":"chat.completion","created":1700000001,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"id":"call_b","type":"function","function":{"name":"g","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"},{"index":1,"message":{"role":"assistant","content":"no tools"},"logprobs":{"content":[{"token":"no","logprob":-0.1,"bytes":[110,111],"top_logprobs":[]}],"refusal":null},"finish_reason":"length"}],"usage":{"prompt_tokens":30,"completion_tokens":20,"total_tokens":50}}`},
	{"openai reasoning", protocol.OpenAI, `{"id":"c3","object":"chat.completion","created":1,"model":"qwen","choices":[{"index":0,"message":{"role":"assistant","content":"42","reasoning_content":"think"},"finish_reason":"stop"}]}`},
	{"anthropic tools", protocol.Anthropic, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"I'll check."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris","n":[1,2.5]}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":91}}`},
	{"anthropic thinking", protocol.Anthropic, `{"id":"msg_02","type":"message","role":"assistant","model":"claude-opus-4","content":[{"type":"thinking","thinking":"Let me see.","signature":"sig=="},{"type":"redacted_thinking","data":"opaque"},{"type":"text","text":"Yes"}],"stop_reason":"stop_sequence","stop_sequence":"</x>","usage":{"input_tokens":10,"output_tokens":3}}`},
	{"anthropic empty", protocol.Anthropic, `{"id":"msg_03","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":0}}`},
}

// semantic is what a client's SDK reads of an answer: its choices'
// text, tool calls and refusals, and its finish and usage.
func semantic(t *testing.T, d protocol.Dialect, whole []byte) (contract.Answer, Facts) {
	t.Helper()
	a, err := contract.ParseAnswer(d, whole)
	if err != nil {
		t.Fatalf("%v\n%s", err, whole)
	}
	f, err := Inspect(d, whole)
	if err != nil {
		t.Fatalf("%v\n%s", err, whole)
	}
	for i := range a.Choices {
		if len(a.Choices[i].Text) == 0 {
			a.Choices[i].Text = nil
		}
		if len(a.Choices[i].Calls) == 0 {
			a.Choices[i].Calls = nil
		}
		for j := range a.Choices[i].Calls {
			// Arguments compared by value: the stream may compact them.
			var v any
			json.Unmarshal(a.Choices[i].Calls[j].Args, &v)
			a.Choices[i].Calls[j].Args, _ = json.Marshal(v)
		}
	}
	return a, f
}

// A vendor's stream collects into a whole answer that streams back
// into the same whole: the form a stream is replayed in holds what the
// client's SDK reads of the original, text, tool calls and usage.
func TestCollectVendorStreams(t *testing.T) {
	for _, s := range streams {
		t.Run(s.file, func(t *testing.T) {
			data, err := os.ReadFile(s.file)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := Collect(s.d, data)
			if err != nil {
				t.Fatalf("collect: %v", err)
			}
			if !json.Valid(whole) {
				t.Fatalf("not JSON: %s", whole)
			}
			f, err := Inspect(s.d, whole)
			if err != nil || !f.Finished || f.Refused || !f.Usage.Known {
				t.Errorf("facts %+v, %v; want finished, with usage", f, err)
			}
			// The stream's text, as the protocol's one event reader reads
			// it, is the whole answer's.
			chk := protocol.NewStreamCheck(s.d)
			var text []byte
			chk.CaptureText(&text)
			chk.Feed(data)
			a, _ := semantic(t, s.d, whole)
			if got := string(a.Choices[0].Text); got != string(text) {
				t.Errorf("whole text %q; the stream's %q", got, text)
			}
			again, err := Stream(s.d, whole, Options{IncludeUsage: true})
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			back, err := Collect(s.d, again)
			if err != nil {
				t.Fatalf("collect the replay: %v\n%s", err, again)
			}
			if !bytes.Equal(back, whole) {
				t.Errorf("replay collects to another answer:\n%s\n%s", whole, back)
			}
		})
	}
}

// A whole answer written as a stream is one the protocol's stream check
// finds complete and well-formed in its dialect, and collects back to
// what the client read of the original.
func TestStreamWholeAnswers(t *testing.T) {
	for _, w := range wholes {
		t.Run(w.name, func(t *testing.T) {
			s, err := Stream(w.d, []byte(w.body), Options{IncludeUsage: true})
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			chk := protocol.NewStreamCheck(w.d)
			if _, ok, _ := chk.Feed(s); !ok || !chk.Terminated() || chk.UpstreamError() {
				t.Fatalf("the stream check refuses the replay (ok %v, terminated %v):\n%s", ok, chk.Terminated(), s)
			}
			back, err := Collect(w.d, s)
			if err != nil {
				t.Fatalf("collect: %v\n%s", err, s)
			}
			wa, wf := semantic(t, w.d, []byte(w.body))
			ba, bf := semantic(t, w.d, back)
			if !reflect.DeepEqual(wa, ba) || wf != bf {
				t.Errorf("the replay reads otherwise:\n%+v %+v\n%+v %+v\n%s", wa, wf, ba, bf, back)
			}
			if again, _ := Stream(w.d, back, Options{IncludeUsage: true}); !bytes.Equal(again, s) {
				t.Errorf("the collected answer streams otherwise:\n%s\n%s", s, again)
			}
		})
	}
	// Without include_usage an OpenAI replay has no usage chunk.
	s, _ := Stream(protocol.OpenAI, []byte(wholes[0].body), Options{})
	if bytes.Contains(s, []byte(`"usage"`)) {
		t.Errorf("a usage chunk the client did not ask for:\n%s", s)
	}
}

// Every legal way a provider writes a stream (sseenc's encodings: spaced,
// pretty, shuffled, escaped JSON; CR, CRLF; comments; named OpenAI
// events) collects to the same whole answer.
func TestCollectAnyEncoding(t *testing.T) {
	for _, s := range streams {
		data, err := os.ReadFile(s.file)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Collect(s.d, data)
		if err != nil {
			t.Fatal(err)
		}
		events, _ := translate.ParseEvents(data)
		for _, word := range sseenc.Words() {
			switch word {
			case "nodone", "noping", "usagelast", "keepalive", "pings", "noevent":
				continue // the writer's words, or a framing only Anthropic's clients read
			}
			enc := sseenc.MustParse(word)
			st := enc.Stream(rand.New(rand.NewPCG(1, 2)))
			var re []byte
			for _, ev := range events {
				re = st.AppendEvent(re, ev.Name, ev.Data)
			}
			got, err := Collect(s.d, re)
			if err != nil {
				t.Errorf("%s %s: %v", s.file, word, err)
				continue
			}
			a1, f1 := semantic(t, s.d, want)
			a2, f2 := semantic(t, s.d, got)
			if !reflect.DeepEqual(a1, a2) || f1 != f2 {
				t.Errorf("%s %s: another answer", s.file, word)
			}
		}
	}
}

// A stream that is cut, failed, or has a part the collector does not
// know is not collected.
func TestCollectRefuses(t *testing.T) {
	oa, _ := os.ReadFile("../protocol/testdata/streams/openai_chat.sse")
	an, _ := os.ReadFile("../protocol/testdata/streams/anthropic.sse")
	cut := func(b []byte, marker string) []byte { return b[:bytes.LastIndex(b, []byte(marker))] }
	for _, c := range []struct {
		name string
		d    protocol.Dialect
		s    []byte
		want error
	}{
		{"openai without [DONE]", protocol.OpenAI, cut(oa, "data: [DONE]"), ErrIncomplete},
		{"openai cut mid-event", protocol.OpenAI, oa[:len(oa)/2], ErrIncomplete},
		{"openai error event", protocol.OpenAI, []byte("data: {\"error\":{\"message\":\"overloaded\"}}\n\ndata: [DONE]\n\n"), ErrFailed},
		{"openai no finish", protocol.OpenAI, []byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n"), ErrIncomplete},
		{"openai unknown delta", protocol.OpenAI, []byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"audio\":{\"data\":\"x\"}},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"), ErrShape},
		{"openai repeated name", protocol.OpenAI, []byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\",\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"), ErrShape},
		{"anthropic without message_stop", protocol.Anthropic, cut(an, "event: message_stop"), ErrIncomplete},
		{"anthropic error", protocol.Anthropic, []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n"), ErrFailed},
		{"anthropic citations", protocol.Anthropic, []byte(strings.Join([]string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}`,
			`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}`,
		}, "\n\n") + "\n\n"), ErrShape},
	} {
		if _, err := Collect(c.d, c.s); !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
}

func TestInspect(t *testing.T) {
	for _, c := range []struct {
		name string
		d    protocol.Dialect
		body string
		want Facts
	}{
		{"openai", protocol.OpenAI, wholes[0].body, Facts{Finished: true, Usage: Usage{Input: 8, CachedInput: 4, Output: 5, Known: true}}},
		{"openai refusal", protocol.OpenAI, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't"},"finish_reason":"stop"}]}`, Facts{Finished: true, Refused: true}},
		{"openai filtered", protocol.OpenAI, `{"choices":[{"index":0,"message":{"content":"x"},"finish_reason":"content_filter"}]}`, Facts{Finished: true, Refused: true}},
		{"openai one choice unfinished", protocol.OpenAI, `{"choices":[{"index":0,"message":{"content":"x"},"finish_reason":"stop"},{"index":1,"message":{"content":"y"},"finish_reason":null}]}`, Facts{}},
		{"anthropic", protocol.Anthropic, wholes[3].body, Facts{Finished: true, Usage: Usage{Input: 472, CachedInput: 100, Output: 91, Known: true}}},
		{"anthropic refusal", protocol.Anthropic, `{"content":[],"stop_reason":"refusal"}`, Facts{Finished: true, Refused: true}},
		{"anthropic unfinished", protocol.Anthropic, `{"content":[],"stop_reason":null}`, Facts{}},
	} {
		got, err := Inspect(c.d, []byte(c.body))
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	// A stream whose client did not ask for usage collects without it;
	// WithUsage puts the provider's count in.
	w := WithUsage(protocol.OpenAI, []byte(`{"id":"c","choices":[]}`), Usage{Input: 8, CachedInput: 2, Output: 3, Known: true})
	if f, _ := Inspect(protocol.OpenAI, w); f.Usage != (Usage{Input: 8, CachedInput: 2, Output: 3, Known: true}) {
		t.Errorf("WithUsage: %s reads %+v", w, f.Usage)
	}
}

// A collector fed a stream in any cuts collects what Collect does, and
// one past its bound holds nothing and says so.
func TestCollectorCuts(t *testing.T) {
	for _, s := range streams {
		data, _ := os.ReadFile(s.file)
		want, err := Collect(s.d, data)
		if err != nil {
			t.Fatal(err)
		}
		rnd := rand.New(rand.NewPCG(3, 4))
		for range 20 {
			c := NewCollector(s.d, 1<<20)
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 1+rnd.IntN(40))
				c.Write(rest[:n])
				rest = rest[n:]
			}
			if got, err := c.Whole(); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s in cuts: %v\n%s\n%s", s.file, err, got, want)
			}
		}
		c := NewCollector(s.d, len(want)/4)
		c.Write(data)
		if _, err := c.Whole(); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s past the bound: %v", s.file, err)
		}
	}
}

// FuzzCollect: whatever bytes a stream holds, collecting never panics;
// what collects streams back into a stream the protocol's check finds
// whole, which collects to the same answer; and the collector gives
// the same answer however the bytes are cut.
func FuzzCollect(f *testing.F) {
	for _, s := range streams {
		data, err := os.ReadFile(s.file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, s.d == protocol.Anthropic, uint16(7))
	}
	for _, w := range wholes {
		s, _ := Stream(w.d, []byte(w.body), Options{IncludeUsage: true})
		f.Add(s, w.d == protocol.Anthropic, uint16(13))
	}
	f.Fuzz(func(t *testing.T, stream []byte, anthropic bool, cut uint16) {
		d := protocol.OpenAI
		if anthropic {
			d = protocol.Anthropic
		}
		whole, err := Collect(d, stream)
		c := NewCollector(d, 0)
		step := 1 + int(cut)%64
		for rest := stream; len(rest) > 0; {
			n := min(step, len(rest))
			c.Write(rest[:n])
			rest = rest[n:]
		}
		cutWhole, cutErr := c.Whole()
		if (err == nil) != (cutErr == nil) || !bytes.Equal(whole, cutWhole) {
			t.Fatalf("cuts of %d change the answer: %v / %v", step, err, cutErr)
		}
		if err != nil {
			return
		}
		if _, err := Inspect(d, whole); err != nil {
			t.Fatalf("the collected answer does not read: %v\n%s", err, whole)
		}
		again, err := Stream(d, whole, Options{IncludeUsage: true})
		if err != nil {
			return // a shape it cannot write back: the cache does not store it
		}
		chk := protocol.NewStreamCheck(d)
		if _, ok, _ := chk.Feed(again); !ok || !chk.Terminated() {
			t.Fatalf("the replay is not a whole stream:\n%s", again)
		}
		back, err := Collect(d, again)
		if err != nil {
			t.Fatalf("the replay does not collect: %v\n%s", err, again)
		}
		if again2, _ := Stream(d, back, Options{IncludeUsage: true}); !bytes.Equal(again, again2) {
			t.Fatalf("the replay's answer streams otherwise:\n%s\n%s", again, again2)
		}
	})
}
