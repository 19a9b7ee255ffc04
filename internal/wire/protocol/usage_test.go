package protocol

import (
	"strconv"
	"strings"
	"testing"
)

func TestOutputTokens(t *testing.T) {
	for _, c := range []struct {
		body        string
		n           int
		found, good bool
		finish      string
	}{
		{`{"choices":[{"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":17}}`, 17, true, true, "length"},
		{`{"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":9}}`, 9, true, true, "end_turn"},
		{`{"choices":[]}`, 0, false, true, ""},
		{`[1,2]`, 0, false, true, ""},
		{`{"usage":"x"}`, 0, false, true, ""},
		{`{"stop_reason":"` + strings.Repeat("x", 100) + `"}`, 0, false, true, ""},
		{`garbage`, 0, false, false, ""},
		{`{"usage":{"output_tokens":1}`, 0, false, false, ""},
	} {
		n, found, good, finish := OutputTokens([]byte(c.body))
		if n != c.n || found != c.found || good != c.good || finish != c.finish {
			t.Errorf("%s: got %d %v %v %q", c.body, n, found, good, finish)
		}
	}
}

func TestStreamUsageAcrossChunks(t *testing.T) {
	stream := "data: {\"a\":1}\n\ndata: {\"a\":2}\n\nevent: message_delta\ndata: {\"usage\":{\"output_tokens\":42}}\n\n"
	for split := 1; split < len(stream); split++ {
		var u StreamUsage
		u.Write([]byte(stream[:split]))
		u.Write([]byte(stream[split:]))
		if n, ok := u.Tokens(); n != 42 || !ok {
			t.Fatalf("split at %d: got %d %v", split, n, ok)
		}
	}
	// The finish reason, however the stream is cut: OpenAI's last
	// choice chunk, Anthropic's message_delta.
	for _, c := range []struct{ stream, want string }{
		{"data: {\"choices\":[{\"delta\":{},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n", "tool_calls"},
		{"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":5}}\n\n", "max_tokens"},
	} {
		for split := 1; split < len(c.stream); split++ {
			var u StreamUsage
			u.Write([]byte(c.stream[:split]))
			u.Write([]byte(c.stream[split:]))
			if got := u.FinishReason(); got != c.want {
				t.Fatalf("split at %d: finish reason %q, want %q", split, got, c.want)
			}
		}
	}
	var u StreamUsage
	u.Write([]byte(`data: {"choices":[{"delta":{"role":"assistant","content":""}}]}` + "\n\n" +
		`data: {"choices":[{"delta":{"content":" a"}}]}` + "\n\n" + `data: {"choices":[{"delta":{"content":" b"}}]}` + "\n\n" +
		`data: {"choices":[{"delta":{"content":" c"}}]}` + "\n\n" + `data: {"choices":[{"delta":{}}]}` + "\n\ndata: [DONE]\n\n"))
	if n, ok := u.Tokens(); n != 3 || ok {
		t.Fatalf("event count: got %d %v", n, ok)
	}
}

func TestStreamUsageSmallChunksAndNoAllocs(t *testing.T) {
	stream := "data: {\"usage\":{\"output_tokens\":1}}\n\ndata: {\"x\":1}\n\ndata: {\"usage\":{\"output_tokens\":1234}}\n\n"
	var u StreamUsage
	for i := 0; i < len(stream); i += 3 { // three bytes at a time
		u.Write([]byte(stream[i:min(i+3, len(stream))]))
	}
	if n, ok := u.Tokens(); n != 1234 || !ok {
		t.Fatalf("got %d %v, want the last count, 1234", n, ok)
	}
	if raceEnabled {
		return // the race detector empties pools at random
	}
	chunk := []byte(`data: {"choices":[{"delta":{"content":" word"}}]}` + "\n\n")
	allocs := testing.AllocsPerRun(100, func() { u.Write(chunk) })
	if allocs != 0 {
		t.Errorf("%v allocations per chunk, want 0", allocs)
	}
}

// A provider's usage is read the same however its stream is cut, and a
// count no provider could mean (negative, or past MaxUsage) is no count.
func FuzzStreamUsage(f *testing.F) {
	f.Add([]byte(`data: {"choices":[{"delta":{"content":"hi"}}]}`), uint32(17), uint16(5), uint16(40))
	f.Add([]byte(`event: message_delta`), uint32(99_999_999), uint16(1), uint16(1))
	f.Add([]byte(`"output_tokens": 12`), uint32(0), uint16(0), uint16(3))
	f.Fuzz(func(t *testing.T, junk []byte, n uint32, a, b uint16) {
		// Any bytes at all: no panic, no negative or out-of-bounds count.
		var raw StreamUsage
		raw.Write(junk)
		if got, found := raw.Tokens(); got < 0 || (found && got > MaxUsage) {
			t.Fatalf("count %d (found %v) from %q", got, found, junk)
		}
		if v, found, _, _ := OutputTokens(junk); v < 0 || (found && v > MaxUsage) {
			t.Fatalf("whole-answer count %d from %q", v, junk)
		}
		// A well-formed stream ending in a usage event, cut at two
		// arbitrary places: the count is the event's.
		stream := []byte("data: " + strconv.Quote(string(junk)) + "\n\ndata: {\"usage\":{\"completion_tokens\":" + strconv.FormatUint(uint64(n), 10) + "}}\n\ndata: [DONE]\n\n")
		i, j := int(a)%(len(stream)+1), int(b)%(len(stream)+1)
		if i > j {
			i, j = j, i
		}
		var u StreamUsage
		u.Write(stream[:i])
		u.Write(stream[i:j])
		u.Write(stream[j:])
		got, found := u.Tokens()
		switch {
		case n <= MaxUsage && (!found || got != int(n)):
			t.Fatalf("cut at %d and %d: %d (found %v), want %d", i, j, got, found, n)
		case n > MaxUsage && found && got > MaxUsage:
			t.Fatalf("count %d past MaxUsage taken", got)
		}
	})
}

// FuzzAnswerScan: an answer the fast scan takes is read exactly as the
// decoder reads it.
func FuzzAnswerScan(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
		`{"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":9}}`,
		`{"choices":[{"finish_reason":"length"},{"finish_reason":7}],"usage":{"completion_tokens":-4,"output_tokens":5}}`,
		`{"Usage":{"completion_tokens":1}}`, `{"usage":{"completion_tokens":1.0}}`, `{"usage":null,"choices":null}`,
		`{"usage":{"completion_tokens":1},"usage":{"output_tokens":2}}`, `{"stop_reason":"\u0065nd"}`, ` [ ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, ok := scanAnswer(data)
		if !ok {
			return
		}
		n, found, valid, finish := a.result()
		rn, rfound, rvalid, rfinish := decodeAnswer(data)
		if n != rn || found != rfound || valid != rvalid || finish != rfinish {
			t.Fatalf("%q: fast scan %d %v %v %q, decoder %d %v %v %q", data, n, found, valid, finish, rn, rfound, rvalid, rfinish)
		}
	})
}

// TestOutputTokensAllocs: a chat answer's usage and finish reason cost
// one allocation, the reason's string.
func TestOutputTokensAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector; .ci/run checks them without it")
	}
	raw := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	if n := testing.AllocsPerRun(100, func() {
		if v, found, valid, finish := OutputTokens(raw); v != 1 || !found || !valid || finish != "stop" {
			t.Fatalf("got %d %v %v %q", v, found, valid, finish)
		}
	}); n > 1 {
		t.Errorf("%.0f allocations per answer read, want at most 1 (the finish reason)", n)
	}
}
