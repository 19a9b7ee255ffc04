package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// pausingTransport answers a stream in pieces, waiting pause before the
// piece at index at, with pings every tick while it waits.
type pausingTransport struct {
	pieces    []string
	at        int
	pause     time.Duration
	tick      string
	tickEvery time.Duration
}

func (p pausingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		for i, piece := range p.pieces {
			if i == p.at {
				end := time.Now().Add(p.pause)
				for time.Now().Before(end) {
					select {
					case <-r.Context().Done():
						return
					case <-time.After(p.tickEvery):
					}
					if _, err := pw.Write([]byte(p.tick)); err != nil {
						return
					}
				}
			}
			if _, err := pw.Write([]byte(piece)); err != nil {
				return
			}
		}
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: r}, nil
}

// A stream is watched for stalls from its first token until a tool call
// begins: a provider's own tool (a web search) pauses between events,
// with only pings, far longer than the stall deadline, and the answer
// must still arrive whole. The same pause in text is a stall.
func TestToolPauseIsNotAStall(t *testing.T) {
	const (
		start   = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
		text    = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me look.\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
		search  = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\",\"name\":\"web_search\",\"input\":{}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"query\\\":\\\"x\\\"}\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
		after   = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Found it.\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
		end     = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		ping    = "event: ping\ndata: {\"type\":\"ping\"}\n\n"
		request = `{"model":"mock-claude","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	)
	for _, c := range []struct {
		name   string
		pieces []string
		at     int
		whole  bool
	}{
		{"a paused tool", []string{start, text, search, after, end}, 3, true},
		{"paused text", []string{start, text, after, end}, 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, mock.Config{}, func(cfg *config.Config) {
				cfg.Server.StreamStallFloor = config.Duration(300 * time.Millisecond)
				cfg.Server.StreamStallTimeout = config.Duration(300 * time.Millisecond)
				noContinuation(cfg)
			}, func(o *gateway.Options) {
				o.Transport = pausingTransport{pieces: c.pieces, at: c.at, pause: 1500 * time.Millisecond, tick: ping, tickEvery: 100 * time.Millisecond}
			})
			status, _, body := s.do("/v1/messages", request, map[string]string{"anthropic-version": "2023-06-01"})
			got := string(body)
			whole := status == 200 && strings.Contains(got, "Found it.") && strings.HasSuffix(got, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") && !strings.Contains(got, "event: error")
			if whole != c.whole {
				t.Fatalf("status %d, whole %v, want %v:\n%s", status, whole, c.whole, got)
			}
			if !c.whole && !strings.Contains(got, "sent nothing new") {
				t.Fatalf("a stalled text stream ended without the stall named:\n%s", got)
			}
		})
	}
}
