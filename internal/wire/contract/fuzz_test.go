package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// collect runs a Collector over stream in the given cuts.
func collect(d protocol.Dialect, stream []byte, cuts ...int) (Answer, error) {
	k := NewCollector(d)
	at := 0
	for _, c := range cuts {
		k.Write(stream[at:c])
		at = c
	}
	k.Write(stream[at:])
	return k.Answer()
}

// FuzzCollector: a stream collected in one write or cut at two places
// gives the same answer, or the same error: what the gateway judges
// does not depend on how the provider's bytes were packetised.
func FuzzCollector(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"{\\\"a\\\":\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"1}\"}}]}\n\ndata: [DONE]\n\n"), uint16(20), uint16(60), false)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\"\"}}]}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]}}]}\n\n"), uint16(7), uint16(90), false)
	f.Add([]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"name\":\"f\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n"), uint16(50), uint16(51), true)
	f.Add([]byte("data: {\"choices\":[{\"index\":99,\"delta\":{\"content\":\"x\"}}]}\n"), uint16(0), uint16(3), false)
	f.Add([]byte("data:{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}"), uint16(5), uint16(5), true)
	f.Fuzz(func(t *testing.T, stream []byte, a, b uint16, anthropic bool) {
		d := protocol.OpenAI
		if anthropic {
			d = protocol.Anthropic
		}
		i, j := int(a)%(len(stream)+1), int(b)%(len(stream)+1)
		if i > j {
			i, j = j, i
		}
		whole, werr := collect(d, stream)
		split, serr := collect(d, stream, i, j)
		if fmt.Sprint(werr) != fmt.Sprint(serr) || !sameAnswer(whole, split) {
			t.Fatalf("whole: %+v, %v\ncut at %d and %d: %+v, %v", whole, werr, i, j, split, serr)
		}
		if len(whole.Choices) > maxChoices {
			t.Fatalf("%d choices kept", len(whole.Choices))
		}
	})
}

// sameAnswer compares answers with nil and empty byte slices equal.
func sameAnswer(a, b Answer) bool {
	norm := func(a Answer) Answer {
		out := Answer{}
		for _, c := range a.Choices {
			n := Choice{Text: append([]byte{}, c.Text...), Refusal: c.Refusal}
			for _, call := range c.Calls {
				n.Calls = append(n.Calls, Call{Name: call.Name, Args: append([]byte{}, call.Args...)})
			}
			out.Choices = append(out.Choices, n)
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// FuzzAnswer: an answer's text and tool call read the same from the
// whole answer (ParseAnswer) and from the same answer streamed
// (Collector) and cut anywhere, in either dialect, and as the provider
// wrote them. The gateway judges streamed and whole answers alike.
func FuzzAnswer(f *testing.F) {
	f.Add(`{"city":"Paris"}`, "get_weather", `{"city":"Paris"}`, uint16(40), false)
	f.Add("plain text", "", "", uint16(0), true)
	f.Add("line one\nline \"two\"\u2028", "f", `{"nested":{"a":[1,2,{}]}}`, uint16(200), true)
	f.Add("", "tool", `not json`, uint16(9), false)
	f.Add("\xff\xfe", "\x00", `{"k":"\u0000"}`, uint16(3), true)
	f.Fuzz(func(t *testing.T, text, tool, args string, cut uint16, anthropic bool) {
		if !json.Valid([]byte(args)) || !strings.HasPrefix(strings.TrimSpace(args), "{") {
			quoted, _ := json.Marshal(args)
			args = `{"raw":` + string(quoted) + `}` // Anthropic's input is an object
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, []byte(args))
		// What a JSON reader makes of the strings, invalid UTF-8 included.
		text, tool, args = roundTrip(text), roundTrip(tool), roundTrip(compact.String())

		whole, stream := openAIAnswer(text, tool, args)
		d := protocol.OpenAI
		if anthropic {
			whole, stream = anthropicAnswer(text, tool, args)
			d = protocol.Anthropic
		}
		got, err := ParseAnswer(d, whole)
		if err != nil {
			t.Fatalf("ParseAnswer: %v\n%s", err, whole)
		}
		want := Answer{Choices: []Choice{{Text: []byte(text)}}}
		if tool != "" {
			want.Choices[0].Calls = []Call{{Name: tool, Args: []byte(args)}}
		}
		if !sameAnswer(got, want) {
			t.Fatalf("whole answer read as %+v, want %+v\n%s", got, want, whole)
		}
		c := int(cut) % (len(stream) + 1)
		streamed, err := collect(d, stream, c)
		if err != nil || !sameAnswer(streamed, want) {
			t.Fatalf("stream cut at %d read as %+v, %v; want %+v\n%s", c, streamed, err, want, stream)
		}
	})
}

func roundTrip(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// openAIAnswer writes one answer as a chat.completion and as a stream
// whose text comes in two deltas and whose arguments come in two.
func openAIAnswer(text, tool, args string) (whole, stream []byte) {
	calls, deltas := "", ""
	if tool != "" {
		calls = fmt.Sprintf(`,"tool_calls":[{"id":"c","type":"function","function":{"name":%s,"arguments":%s}}]`, jsonString(tool), jsonString(args))
		h := halfway(args)
		deltas = fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":%s,\"arguments\":%s}}]}}]}\n\n", jsonString(tool), jsonString(args[:h])) +
			fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":%s}}]}}]}\n\n", jsonString(args[h:]))
	}
	whole = fmt.Appendf(nil, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%s%s}}]}`, jsonString(text), calls)
	h := halfway(text)
	stream = fmt.Appendf(nil, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n%sdata: [DONE]\n\n",
		jsonString(text[:h]), jsonString(text[h:]), deltas)
	return whole, stream
}

// anthropicAnswer writes one answer as a message and as its stream.
func anthropicAnswer(text, tool, args string) (whole, stream []byte) {
	blocks := fmt.Sprintf(`{"type":"text","text":%s}`, jsonString(text))
	h := halfway(text)
	events := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%s}}\n\n", jsonString(text[:h])) +
		fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%s}}\n\n", jsonString(text[h:]))
	if tool != "" {
		blocks += fmt.Sprintf(`,{"type":"tool_use","id":"t","name":%s,"input":%s}`, jsonString(tool), args)
		a := halfway(args)
		events += fmt.Sprintf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":%s,\"input\":{}}}\n\n", jsonString(tool)) +
			fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":%s}}\n\n", jsonString(args[:a])) +
			fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":%s}}\n\n", jsonString(args[a:]))
	}
	whole = fmt.Appendf(nil, `{"type":"message","role":"assistant","content":[%s]}`, blocks)
	stream = []byte(events + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return whole, stream
}

// halfway is an index near the middle of s that does not split a rune,
// as a provider's deltas never do.
func halfway(s string) int {
	h := len(s) / 2
	for h > 0 && h < len(s) && s[h]&0xc0 == 0x80 {
		h--
	}
	return h
}

// FuzzContract: whatever schema a request declares and whatever answer
// comes back, ForRequest refuses with a *RequestError or compiles, and
// Check gives a verdict without panicking; a verdict's reason is one
// line (it becomes a header and a log field).
func FuzzContract(f *testing.F) {
	f.Add([]byte(weather), []byte(`{"city":"Paris"}`), "", true)
	f.Add([]byte(weather), []byte(`{"town":1}`), "", false)
	f.Add([]byte(`{"type":"object","properties":{"n":{"type":"integer","maximum":1e308}}}`), []byte(`{"n":1e309}`), "", false)
	f.Add([]byte(`{"$ref":"http://127.0.0.1:1/x.json"}`), []byte(`{}`), "", false)
	f.Add([]byte(`{"pattern":"(a+)+$","type":"string"}`), []byte(`"aaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"`), "", false)
	f.Add([]byte(`true`), []byte(``), "I can't help with that.\nSorry.", false)
	f.Add([]byte(`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`), []byte(`{}`), "", true)
	f.Fuzz(func(t *testing.T, schema, answer []byte, refusal string, asTool bool) {
		var rf, tools []byte
		if asTool {
			tools = fmt.Appendf(nil, `[{"type":"function","function":{"name":"f","parameters":%s}}]`, schema)
		} else {
			rf = fmt.Appendf(nil, `{"type":"json_schema","json_schema":{"name":"x","schema":%s}}`, schema)
		}
		c, err := ForRequest(context.Background(), protocol.OpenAI, rf, tools)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%T is not a *RequestError: %v", err, err)
			}
			return
		}
		if c == nil {
			return
		}
		ch := Choice{Text: answer, Refusal: refusal}
		if asTool {
			ch = Choice{Calls: []Call{{Name: "f", Args: answer}}}
		}
		if err := c.Check(Answer{Choices: []Choice{ch}}); err != nil && strings.ContainsAny(err.Error(), "\r\n") && !strings.ContainsAny(refusal, "\r\n") {
			t.Fatalf("a reason on several lines: %q", err)
		}
	})
}
