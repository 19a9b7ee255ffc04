package gateway

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The answer's text, cut into events anywhere, in OpenAI's and
// Anthropic's streams, delivered to the filter in batches of any size:
// what comes out is the same events in the same order, every byte of the
// key blanked but at most its first minHeld-1 (a start too short to hold
// an event for), every other byte as sent.
func TestEventScrubAcrossEvents(t *testing.T) {
	const key = "sk-ant-crossEventSecret-0123456789"
	k := newKeyScrub(key)
	rng := rand.New(rand.NewPCG(22, 5))
	formats := []struct {
		open, close string
	}{
		{`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`, `"}}]}` + "\n\n"},
		{"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\": \"", "\"}}\n\n"},
	}
	answer := "here: " + key + " sk-ant-cr then " + key[:10] + " and " + key + "s"
	var keyAt []int
	for i := 0; ; {
		j := strings.Index(answer[i:], key)
		if j < 0 {
			break
		}
		keyAt = append(keyAt, i+j)
		i += j + len(key)
	}
	for trial := range 400 {
		f := formats[trial%2]
		var events []string
		for i := 0; i < len(answer); {
			n := min(1+rng.IntN(8), len(answer)-i)
			events = append(events, f.open+answer[i:i+n]+f.close)
			i += n
		}
		events = append(events, "data: [DONE]\n\n")
		var s eventScrub
		var out strings.Builder
		for i := 0; i < len(events); {
			n := min(1+rng.IntN(3), len(events)-i)
			out.Write(s.events(k, []byte(strings.Join(events[i:i+n], ""))))
			i += n
		}
		out.Write(s.flush())
		got := strings.Split(out.String(), "\n\n")
		if len(got) != len(events)+1 || got[len(got)-2] != "data: [DONE]" {
			t.Fatalf("trial %d: %d events out of %d, or out of order:\n%s", trial, len(got)-1, len(events), out.String())
		}
		var text strings.Builder
		for _, ev := range got[:len(got)-2] {
			body, ok := strings.CutPrefix(ev+"\n\n", f.open)
			if !ok || !strings.HasSuffix(body, f.close) {
				t.Fatalf("trial %d: an event changed shape: %q", trial, ev)
			}
			text.WriteString(strings.TrimSuffix(body, f.close))
		}
		tx := text.String()
		if len(tx) != len(answer) {
			t.Fatalf("trial %d: text %q, want the length of %q", trial, tx, answer)
		}
		for i := range answer {
			inKey, start := false, false
			for _, a := range keyAt {
				inKey = inKey || i >= a && i < a+len(key)
				start = start || i >= a && i < a+minHeld-1
			}
			switch {
			case inKey && !start && tx[i] != '*', inKey && start && tx[i] != '*' && tx[i] != answer[i], !inKey && tx[i] != answer[i]:
				t.Fatalf("trial %d: byte %d is %q in\n got %q\nfrom %q", trial, i, tx[i], tx, answer)
			}
		}
	}
}

// Text that cannot begin a key goes on at once, as p itself: no event
// is held, nothing allocated.
func TestEventScrubPassesPlainText(t *testing.T) {
	k := newKeyScrub("sk-ant-crossEventSecret-0123456789")
	var s eventScrub
	p := []byte("data: {\"choices\":[{\"delta\":{\"content\":\"hello world\"}}]}\n\n")
	if allocs := testing.AllocsPerRun(100, func() {
		if out := s.events(k, p); &out[0] != &p[0] || len(out) != len(p) {
			t.Fatal("plain text was not passed on as it came")
		}
	}); allocs != 0 {
		t.Errorf("%v allocations an event", allocs)
	}
}
