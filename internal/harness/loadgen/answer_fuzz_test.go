package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// FuzzReadAnswer: the load generator judges whatever the gateway under
// test answers, whole or streamed, as OK or Failed, with an error
// exactly when it failed; it calls OK only a whole answer that is JSON,
// or a stream that reached its dialect's end marker, and never has its
// first content after its end.
func FuzzReadAnswer(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"), true, false)
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), true, true)
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n"), true, true)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"cut"), true, false)
	f.Add([]byte(`{"object":"chat.completion","choices":[{"message":{"content":"hi"}}]}`), false, false)
	f.Add([]byte(`{"type":"message","content":[]}`), false, true)
	f.Add([]byte(`{"object":"chat.completion","choices":[]}`), false, false)
	f.Fuzz(func(t *testing.T, body []byte, stream, anthropic bool) {
		d := protocol.OpenAI
		if anthropic {
			d = protocol.Anthropic
		}
		a := &attempt{}
		if stream {
			readStream(context.Background(), bytes.NewReader(body), d, a)
		} else {
			readJSON(context.Background(), bytes.NewReader(body), d, a)
		}
		switch a.outcome {
		case report.OK:
			if a.err != nil {
				t.Fatalf("OK with an error: %v", a.err)
			}
		case report.Failed:
			if a.err == nil {
				t.Fatalf("failed without an error: %q", body)
			}
			return
		default:
			t.Fatalf("outcome %v from %q", a.outcome, body)
		}
		if a.end.IsZero() || !a.first.IsZero() && a.first.After(a.end) {
			t.Fatalf("first %v, end %v", a.first, a.end)
		}
		marker := []byte("[DONE]")
		if anthropic {
			marker = []byte("message_stop")
		}
		if stream && !bytes.Contains(body, marker) || !stream && !json.Valid(body) {
			t.Fatalf("OK for %q", body)
		}
	})
}
