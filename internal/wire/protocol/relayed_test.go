package protocol

import (
	"fmt"
	"strings"
	"testing"
)

// A stream's relayed output is counted from its events, never from what
// the provider says it generated: a token an output event, or a token
// for each BytesPerToken bytes of output (and of events too large to
// read), whichever is more. Each event's mark carries the count with it,
// where a relay cuts the stream.
func TestRelayedCountsEventsAndBytes(t *testing.T) {
	chunk := func(text string) string {
		return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\n", text)
	}
	c := NewStreamCheck(OpenAI)
	c.KeepMarks()
	defer c.Release()
	var b strings.Builder
	b.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
	for range 10 {
		b.WriteString(chunk("word "))
	}
	b.WriteString(chunk(strings.Repeat("a", 4096)))    // one event, 128 tokens' worth
	b.WriteString(chunk(strings.Repeat("b", 100<<10))) // too large to read: counted by its size
	if _, ok, _ := c.Feed([]byte(b.String())); !ok {
		t.Fatal("the stream did not check")
	}
	f := c.Facts()
	if n, known := f.Tokens(); !known || n != 1 {
		t.Fatalf("the provider's claim reads %d (known %v), want 1", n, known)
	}
	if !f.Unread {
		t.Fatal("the 100 KiB event was read; the test needs one too large to read")
	}
	data := 10*5 + 4096
	want := (data + f.UnreadBytes + BytesPerToken - 1) / BytesPerToken
	if got := f.Relayed(); got != want || got < (100<<10)/BytesPerToken {
		t.Errorf("relayed %d, want %d: the events' bytes, the unread one's included", got, want)
	}
	marks := c.Marks()
	if len(marks) != 13 {
		t.Fatalf("%d marks, want 13", len(marks))
	}
	for i, w := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, (50 + 4096 + 31) / 32} {
		if marks[i].Relayed != w {
			t.Errorf("mark %d carries %d relayed, want %d", i, marks[i].Relayed, w)
		}
	}
	// Many small events count one each, however little they carry.
	c2 := NewStreamCheck(Anthropic)
	c2.KeepMarks()
	defer c2.Release()
	b.Reset()
	for range 300 {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n")
	}
	c2.Feed([]byte(b.String()))
	if got := c2.Facts().Relayed(); got != 300 {
		t.Errorf("300 one-byte events relayed %d, want 300", got)
	}
}
