package translate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"testing"
)

// tinyChat is an OpenAI chat body of n one-character messages,
// alternating user and assistant, about 30 bytes a message.
func tinyChat(n int) []byte {
	var b bytes.Buffer
	b.Grow(n*32 + 64)
	b.WriteString(`{"model":"m","messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%2 == 0 {
			b.WriteString(`{"role":"user","content":"a"}`)
		} else {
			b.WriteString(`{"role":"assistant","content":"b"}`)
		}
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// Translating a body of 100,000 tiny messages allocates a small multiple
// of the body, not the fifty-odd times a map per message and
// encoding/json per turn cost (590 MB for 9.1 MB of 280,000 messages).
func TestTranslationAllocatesWithinBody(t *testing.T) {
	body := tinyChat(100_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr, err := RequestToAnthropic(body, Options{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("body %d bytes, translated %d, allocated %d (%.1fx the body)", len(body), len(tr.Body), alloc, float64(alloc)/float64(len(body)))
	// 4.7x without the race detector, whose instrumentation allocates
	// more; before, 65x.
	if limit := 8 * uint64(len(body)); alloc > limit {
		t.Errorf("translating a %d-byte body allocated %d bytes, more than 8x (%d)", len(body), alloc, limit)
	}
	var got struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(tr.Body, &got); err != nil || len(got.Messages) != 100_000 || got.Messages[1].Role != "assistant" || got.Messages[1].Content != "b" {
		t.Fatalf("translation wrong: %v, %d messages", err, len(got.Messages))
	}
}

// The hand-written encoder writes what encoding/json writes, byte for
// byte, for every field and omission, escapes included.
func TestEncodeMatchesMarshal(t *testing.T) {
	text, odd := "plain", "quote \" back \\ nl \n tab \t <&> \u2028 é \x01"
	cases := []anRequest{
		{Model: "m", Messages: []anMessage{}, MaxTokens: 1},
		{Model: odd, System: json.RawMessage(` "sys" `), MaxTokens: 5, StopSequences: []string{"x", odd},
			Temperature: json.RawMessage(`0.5`), TopP: json.RawMessage(` 1 `), Stream: true,
			Tools: []anTool{{Name: "f", Description: odd, InputSchema: json.RawMessage(`{ "type" : "object" }`)},
				{Name: "g", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`), Strict: true}},
			ToolChoice: &anToolChoice{Type: "auto", DisableParallelToolUse: true}, Metadata: &anMetadata{UserID: "u"},
			Messages: []anMessage{
				{Role: "user", Blocks: []anBlock{textBlock(text)}, FromStr: true},
				{Role: "assistant", Blocks: []anBlock{textBlock(odd), {Type: "tool_use", ID: "id1", Name: "f", Input: json.RawMessage(`{ "a" : [1, 2] }`)}}},
				{Role: "user", Blocks: []anBlock{{Type: "tool_result", ToolUseID: "id1", Content: json.RawMessage(` "ok" `)},
					{Type: "image", Source: &anSource{Type: "base64", MediaType: "image/png", Data: "AA=="}}}},
				{Role: "user", Blocks: nil},
				{Role: "user", Blocks: []anBlock{textBlock(odd)}, FromStr: true},
				{Role: "assistant", IsStr: true, Text: odd},
				{Role: "user", IsStr: true, Text: ""},
			}},
	}
	for i, c := range cases {
		want, err := marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.encode(0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
	// A repeated key is read as encoding/json reads it: the last value
	// wins, and the first is not "unused".
	o, err := parseObject(json.RawMessage(`{"a":1,"b":2,"a":3}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if v := o.get("a"); string(v) != "3" || !reflect.DeepEqual(o.unused(), []string{"b"}) {
		t.Errorf(`{"a":1,"b":2,"a":3}: a=%s, unused %v; want 3 and [b]`, v, o.unused())
	}
}
