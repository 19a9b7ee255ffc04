package protocol

import "testing"

// FuzzStreamHead: the gateway scans a stream's start for its first
// token as bytes arrive, resuming where the last scan's head ended.
// Whatever the bytes, the head ends on an event boundary within the
// buffer; a token seen in the first c bytes is still the answer with
// more bytes; and resuming from the head of a prefix gives what a scan
// of the whole would (for both dialects and the Responses API).
func FuzzStreamHead(f *testing.F) {
	f.Add([]byte(openAIStream), uint16(40), uint8(0))
	f.Add([]byte(anthropicStream), uint16(120), uint8(1))
	f.Add([]byte(": comment\n\nevent: ping\ndata: {\"type\":\"ping\"}\r\n\r\ndata: [DONE]\n\n"), uint16(13), uint8(1))
	f.Add([]byte("event: response.created\ndata: {\"type\":\"response.created\"}\n\nevent: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n"), uint16(60), uint8(2))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\r\n"), uint16(3), uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint16, which uint8) {
		ep, d := Endpoint{Name: "chat", Dialect: OpenAI}, OpenAI
		switch which % 3 {
		case 1:
			ep.Dialect, d = Anthropic, Anthropic
		case 2:
			ep = Responses
		}
		head, token := StreamHeadFor(ep, d, stream)
		if head < 0 || head > len(stream) {
			t.Fatalf("head %d of %d bytes", head, len(stream))
		}
		if head > 0 {
			// The head ends where an event (or a blank line) does.
			c := NewStreamCheckFor(ep, d)
			if b, _, _ := c.Feed(stream[:head]); b != head {
				t.Fatalf("head %d is not at an event's end (%d): %q", head, b, stream[:head])
			}
		}
		c := int(cut) % (len(stream) + 1)
		h1, t1 := StreamHeadFor(ep, d, stream[:c])
		if h1 > head || t1 && (!token || h1 != head) {
			t.Fatalf("the first %d bytes: head %d, token %v; all %d: head %d, token %v", c, h1, t1, len(stream), head, token)
		}
		h2, t2 := StreamHeadFor(ep, d, stream[h1:])
		if h1+h2 != head || t2 != token {
			t.Fatalf("resumed at %d: head %d, token %v; whole: head %d, token %v", h1, h1+h2, t2, head, token)
		}
	})
}
