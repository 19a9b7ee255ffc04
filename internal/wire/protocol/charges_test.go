package protocol

import (
	"strings"
	"testing"
)

// anthropicStream is a Messages API stream as Claude sends it: the
// opening message_start's usage says output_tokens 1, a placeholder,
// and message_delta carries the final count.
func claudeStream(deltas int, final bool) string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":700,\"cache_creation_input_tokens\":30,\"cache_read_input_tokens\":20,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for range deltas {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" word\"}}\n\n")
	}
	if final {
		b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":23}}\n\n")
		b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}
	return b.String()
}

// A stream cut before its message_delta is charged what it relayed (20
// text deltas: a token each), not message_start's
// placeholder 1; a whole one, its
// message_delta's count. Either way the input is what Claude reported,
// cache reads and writes included. However the stream is split.
func TestStreamUsageMessageStartIsProvisional(t *testing.T) {
	for _, c := range []struct {
		name      string
		stream    string
		out       int
		reported  bool
		wantInput int64
	}{
		{"cut", claudeStream(20, false), 20, false, 750},
		{"whole", claudeStream(20, true), 23, true, 750},
		{"cut before any text", claudeStream(0, false), 1, false, 750},
	} {
		t.Run(c.name, func(t *testing.T) {
			for split := 0; split <= len(c.stream); split++ {
				var u StreamUsage
				u.Write([]byte(c.stream[:split]))
				u.Write([]byte(c.stream[split:]))
				if n, ok := u.Tokens(); n != c.out || ok != c.reported {
					t.Fatalf("split at %d: output %d (reported %v), want %d (%v)", split, n, ok, c.out, c.reported)
				}
				if n, ok := u.InputTokens(); n != c.wantInput || !ok {
					t.Fatalf("split at %d: input %d (%v), want %d", split, n, ok, c.wantInput)
				}
			}
			var u StreamUsage // three bytes at a time
			for i := 0; i < len(c.stream); i += 3 {
				u.Write([]byte(c.stream[i:min(i+3, len(c.stream))]))
			}
			if n, ok := u.Tokens(); n != c.out || ok != c.reported {
				t.Fatalf("3-byte chunks: output %d (reported %v), want %d (%v)", n, ok, c.out, c.reported)
			}
		})
	}
}

// OpenAI's usage chunk (include_usage) gives the stream's input count;
// a stream without one reports none.
func TestStreamUsageOpenAIInput(t *testing.T) {
	stream := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":750,\"completion_tokens\":9,\"total_tokens\":759,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\ndata: [DONE]\n\n"
	for split := 0; split <= len(stream); split++ {
		var u StreamUsage
		u.Write([]byte(stream[:split]))
		u.Write([]byte(stream[split:]))
		if n, ok := u.InputTokens(); n != 750 || !ok {
			t.Fatalf("split at %d: input %d %v, want 750", split, n, ok)
		}
		if n, ok := u.Tokens(); n != 9 || !ok {
			t.Fatalf("split at %d: output %d %v, want 9", split, n, ok)
		}
	}
	var u StreamUsage
	u.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"))
	if n, ok := u.InputTokens(); ok {
		t.Fatalf("input %d reported by a stream without usage", n)
	}
}

func TestInputOf(t *testing.T) {
	for _, c := range []struct {
		body  string
		n     int64
		found bool
	}{
		{`{"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":750,"completion_tokens":17}}`, 750, true},
		{`{"type":"message","usage":{"input_tokens":700,"cache_read_input_tokens":20,"cache_creation_input_tokens":30,"output_tokens":9}}`, 750, true},
		{`{"object":"response","usage":{"input_tokens":750,"input_tokens_details":{"cached_tokens":5},"output_tokens":3}}`, 750, true},
		{`{"usage":{"completion_tokens":17}}`, 0, false},
		{`{"usage":{"prompt_tokens":"750","completion_tokens":17}}`, 0, false},
		{`{"usage":{"prompt_tokens":-1}}`, 0, false},
		{`{"Usage":{"prompt_tokens":12}}`, 12, true}, // the decoder's path
		{`garbage`, 0, false},
	} {
		n, found := InputOf([]byte(c.body))
		if n != c.n || found != c.found {
			t.Errorf("%s: got %d %v, want %d %v", c.body, n, found, c.n, c.found)
		}
	}
	// An input count of another type leaves the output count alone.
	if n, found, _, _ := OutputTokens([]byte(`{"usage":{"prompt_tokens":1.5,"completion_tokens":17}}`)); n != 17 || !found {
		t.Errorf("output count %d %v beside a fractional prompt_tokens, want 17", n, found)
	}
}

// FuzzInputOfScan: the fast scan reads an answer's input count exactly
// as the decoder does.
func FuzzInputOfScan(f *testing.F) {
	for _, s := range []string{
		`{"usage":{"prompt_tokens":750,"completion_tokens":1}}`,
		`{"usage":{"input_tokens":3,"cache_read_input_tokens":4,"cache_creation_input_tokens":null,"output_tokens":9}}`,
		`{"usage":{"prompt_tokens":1.0,"input_tokens":2}}`, `{"usage":{"prompt_tokens":1},"usage":{"input_tokens":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, ok := scanAnswer(data)
		if !ok {
			return
		}
		n, found := a.input()
		rn, rfound := decodeFields(data).input()
		if n != rn || found != rfound {
			t.Fatalf("%q: fast scan %d %v, decoder %d %v", data, n, found, rn, rfound)
		}
	})
}
