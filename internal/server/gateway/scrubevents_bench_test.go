package gateway

import (
	"strings"
	"testing"
)

// BenchmarkScrubEvents is the stream scrubber alone on a realistic
// OpenAI stream (an id, the object, the model and a token of text in
// each event; 200 events, words cut in tokens of about four bytes), for
// a set with nothing in it (the path without scrubbing), a provider's
// key, and a signed Bedrock call's secrets (docs/BENCHMARKS.md).
func BenchmarkScrubEvents(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog while the gateway relays every token it is given. ", 9)
	var events strings.Builder
	for i := 0; i+4 <= len(text) && i < 800; i += 4 {
		events.WriteString(`data: {"id":"chatcmpl-9xYzAbC","object":"chat.completion.chunk","created":1733600000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"` +
			text[i:i+4] + `"},"finish_reason":null}]}` + "\n\n")
	}
	p := []byte(events.String())
	for _, c := range []struct {
		name    string
		secrets []string
	}{
		{"none", nil},
		{"key", []string{"sk-proj-bench0123456789abcdefghijklmnopqrstuvwxyzABCD"}},
		{"signed", []string{"AKIASLUICEBENCH00001", "bench/Secret+Key0123456789abcdefABCDEF",
			strings.Repeat("IQoJb3JpZ2luX2VjE/sluice+session", 32), strings.Repeat("0123456789abcdef", 4), "opr/Header+Secret-0123456789"}},
	} {
		k := newKeyScrub(c.secrets...)
		b.Run(c.name, func(b *testing.B) {
			var s eventScrub
			buf := make([]byte, len(p))
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				copy(buf, p)
				s.events(k, buf)
			}
		})
	}
}
