package protocol

import (
	"strings"
	"testing"
)

const (
	openAIStream = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		": keep-alive\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"completion_tokens\":1}}\n\n" +
		"data: [DONE]\n\n"
	anthropicStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n" +
		"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func TestStreamCheckVerdicts(t *testing.T) {
	cases := []struct {
		name   string
		d      Dialect
		stream string
		want   string
	}{
		{"openai whole", OpenAI, openAIStream, StreamOK},
		{"openai crlf", OpenAI, strings.ReplaceAll(openAIStream, "\n", "\r\n"), StreamOK},
		{"openai cr only", OpenAI, strings.ReplaceAll(openAIStream, "\n", "\r"), StreamOK},
		{"openai done without blank line", OpenAI, strings.TrimSuffix(openAIStream, "\n"), StreamOK},
		{"openai cut before done", OpenAI, strings.TrimSuffix(openAIStream, "data: [DONE]\n\n"), StreamUnterminated},
		{"openai cut mid-event", OpenAI, openAIStream[:60], StreamMalformed},
		{"openai garbage", OpenAI, "<html><body>502 Bad Gateway</body></html>", StreamUnterminated},
		{"openai garbage event", OpenAI, "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]\n\ndata: [DONE]\n\n", StreamMalformed},
		{"openai not json", OpenAI, "data: hello\n\ndata: [DONE]\n\n", StreamMalformed},
		{"openai error event", OpenAI, "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n", StreamErrorEvent},
		{"openai empty", OpenAI, "", StreamUnterminated},
		{"openai multi-line data", OpenAI, "data: {\"a\":\ndata: 1}\n\ndata: [DONE]\n\n", StreamOK},
		{"anthropic whole", Anthropic, anthropicStream, StreamOK},
		{"anthropic data only", Anthropic, "data: {\"type\":\"content_block_delta\"}\n\ndata: {\"type\":\"message_stop\"}\n\n", StreamOK},
		{"anthropic cut", Anthropic, strings.TrimSuffix(anthropicStream, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), StreamUnterminated},
		{"anthropic error event", Anthropic, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n", StreamErrorEvent},
		{"anthropic done is not its terminator", Anthropic, "data: [DONE]\n\n", StreamUnterminated},
		{"long field names are ignored", OpenAI, "datadatadata: x\n\nretry: 100\nid: 7\n\ndata: [DONE]\n\n", StreamOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Whole, and cut at every offset: the verdict is the same.
			for cut := 0; cut <= len(c.stream); cut++ {
				ch := NewStreamCheck(c.d)
				ch.Feed([]byte(c.stream[:cut]))
				ch.Feed([]byte(c.stream[cut:]))
				if got := ch.End(); got != c.want {
					t.Fatalf("cut at %d: verdict %q, want %q", cut, got, c.want)
				}
			}
		})
	}
}

// A relay that passes on bytes only up to each boundary passes on whole
// events, and everything once the stream ends.
func TestStreamCheckBoundaries(t *testing.T) {
	for _, stream := range []string{openAIStream, anthropicStream, strings.ReplaceAll(openAIStream, "\n", "\r\n")} {
		for size := 1; size <= 40; size++ {
			ch := NewStreamCheck(OpenAI)
			var out strings.Builder
			held := ""
			for off := 0; off < len(stream); off += size {
				chunk := stream[off:min(off+size, len(stream))]
				b, ok, _ := ch.Feed([]byte(chunk))
				if !ok {
					t.Fatalf("size %d: a well-formed stream was judged malformed", size)
				}
				data := held + chunk
				if b >= 0 {
					cut := len(held) + b
					out.WriteString(data[:cut])
					held = data[cut:]
				} else {
					held = data
				}
				if w := out.String(); w != "" && !strings.HasSuffix(w, "\n\n") && !strings.HasSuffix(w, "\r\n\r") && !strings.HasSuffix(w, "\r\n\r\n") {
					t.Fatalf("size %d: passed on a partial event: %q", size, w)
				}
			}
			out.WriteString(held)
			if out.String() != stream {
				t.Fatalf("size %d: relayed %q, want %q", size, out.String(), stream)
			}
		}
	}
}

func TestStreamCheckBadStart(t *testing.T) {
	good := "data: {\"a\":1}\n\n"
	bad := "data: {\"a\":\n\n"
	ch := NewStreamCheck(OpenAI)
	b, ok, start := ch.Feed([]byte(good + bad))
	if ok || start != len(good) || b != len(good) {
		t.Fatalf("Feed = (%d, %v, %d); want the bad event found at %d after a boundary at %d", b, ok, start, len(good), len(good))
	}
	// Once bad, always bad.
	if _, ok, _ := ch.Feed([]byte(good)); ok {
		t.Fatal("a malformed stream became well-formed again")
	}
}

func TestStreamCheckAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector empties pools at random; .ci/run checks allocations without it")
	}
	buf := []byte(anthropicStream)
	allocs := testing.AllocsPerRun(100, func() {
		ch := NewStreamCheck(Anthropic)
		ch.Feed(buf[:50])
		ch.Feed(buf[50:])
		if ch.End() != StreamOK {
			t.Fatal("not ok")
		}
		ch.Release()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per stream, want 0", allocs)
	}
}

func FuzzStreamCheck(f *testing.F) {
	f.Add([]byte(openAIStream), uint16(17), false)
	f.Add([]byte(anthropicStream), uint16(100), true)
	f.Add([]byte("data: [DONE]\r\n\r\n"), uint16(3), false)
	f.Fuzz(func(t *testing.T, stream []byte, cut uint16, anthropic bool) {
		d := OpenAI
		if anthropic {
			d = Anthropic
		}
		c := min(int(cut), len(stream))
		whole := NewStreamCheck(d)
		whole.Feed(stream)
		split := NewStreamCheck(d)
		b1, ok1, _ := split.Feed(stream[:c])
		b2, _, _ := split.Feed(stream[c:])
		if b1 > c || b2 > len(stream)-c {
			t.Fatalf("boundaries %d, %d past their chunks", b1, b2)
		}
		_ = ok1
		if w, s := whole.End(), split.End(); w != s {
			t.Fatalf("whole says %q, split at %d says %q", w, c, s)
		}
	})
}
