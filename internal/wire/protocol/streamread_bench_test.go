package protocol

import (
	"strings"
	"testing"
)

// BenchmarkStreamRead is what reading a stream costs per event, with
// only the API the tree had before streams were read by their meaning
// (StreamCheck's Feed and End, the zero StreamUsage), so that the same
// file runs on both trees: a hundred text events in 4 KiB reads, OpenAI
// and Anthropic, compact and as Python's json.dumps writes them.
func BenchmarkStreamRead(b *testing.B) {
	const (
		oaText  = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}` + "\n\n"
		oaHead  = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
		oaTail  = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" + `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":100,"total_tokens":109}}` + "\n\ndata: [DONE]\n\n"
		anHead  = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		anText  = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
		anTail  = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":100}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		nEvents = 100
	)
	spaced := strings.NewReplacer(`":`, `": `, `,"`, `, "`).Replace
	streams := []struct {
		name string
		d    Dialect
		s    string
	}{
		{"openai", OpenAI, oaHead + strings.Repeat(oaText, nEvents) + oaTail},
		{"anthropic", Anthropic, anHead + strings.Repeat(anText, nEvents) + anTail},
	}
	for _, st := range streams {
		for _, form := range []string{"compact", "spaced"} {
			s := []byte(st.s)
			if form == "spaced" {
				s = []byte(spaced(st.s))
			}
			events := strings.Count(string(s), "\n\n")
			chunks := func(feed func([]byte)) {
				for i := 0; i < len(s); i += 4096 {
					feed(s[i:min(i+4096, len(s))])
				}
			}
			b.Run(st.name+"/"+form+"/check", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c := NewStreamCheck(st.d)
					chunks(func(p []byte) { c.Feed(p) })
					c.End()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
			})
			b.Run(st.name+"/"+form+"/usage", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var u StreamUsage
					chunks(u.Write)
					u.Tokens()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
			})
		}
	}
}
