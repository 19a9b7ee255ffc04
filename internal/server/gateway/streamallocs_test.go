package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// cannedStream is an OpenAI stream of n content chunks, a finish chunk,
// a usage chunk and [DONE].
func cannedStream(n int) string {
	var b strings.Builder
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
	for range n {
		b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word \"}}]}\n\n")
	}
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":40,\"total_tokens\":41}}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// cannedAnthropicStream is an Anthropic Messages stream of n text deltas.
func cannedAnthropicStream(n int) string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for range n {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word \"}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":40}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.String()
}

// flushDiscard is a ResponseWriter that can flush, as a stream needs,
// and keeps nothing: what a relay allocates per event is its own.
type flushDiscard struct{ h http.Header }

func (d *flushDiscard) Header() http.Header         { return d.h }
func (d *flushDiscard) Write(p []byte) (int, error) { return len(p), nil }
func (d *flushDiscard) WriteHeader(int)             {}
func (d *flushDiscard) Flush()                      {}

// SetWriteDeadline is what a server's writer has; without it every
// write's deadline would cost the ResponseController an error value.
func (d *flushDiscard) SetWriteDeadline(time.Time) error { return nil }

// streamAllocs is what one streamed chat request for mock-gpt costs in
// allocations, its upstream answer the stream body, on a gateway
// configured by mutate.
func streamAllocs(t *testing.T, mutate func(*config.Config), body string) float64 {
	t.Helper()
	cfg := config.Default("http://127.0.0.1:1")
	if mutate != nil {
		mutate(cfg)
	}
	g, err := gateway.New(cfg, gateway.Options{
		Logger:    gateway.NewLogger(io.Discard, cfg.Log),
		Transport: sseTransport{body: body},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	h := g.Handler()
	rec := httptest.NewRecorder()
	req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(streamReq))
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.HasSuffix(rec.Body.String(), "data: [DONE]\n\n") || strings.Contains(rec.Body.String(), `"error"`) {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	one := func() {
		req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(streamReq))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(&flushDiscard{h: http.Header{}}, req)
	}
	for range 50 {
		one() // warm pools and label caches
	}
	return testing.AllocsPerRun(200, one)
}

// The stream relay allocates nothing per event on an untranslated
// stream: its buffer, filters and chain are made once per stream, and
// every filter works in place. A translated stream costs what the
// translator does per event (about 23 allocations each before the relay
// was one chain, about 21 after).
func TestStreamAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	plain0, plain := streamAllocs(t, nil, cannedStream(0)), streamAllocs(t, nil, cannedStream(200))
	cross0, cross := streamAllocs(t, openAIOnAnthropic, cannedAnthropicStream(0)), streamAllocs(t, openAIOnAnthropic, cannedAnthropicStream(200))
	t.Logf("untranslated: %.1f allocations for a stream of no content events, %.1f for 200; translated: %.1f and %.1f", plain0, plain, cross0, cross)
	if plain > plain0+1 {
		t.Errorf("an untranslated stream of 200 events allocates %.1f times, one of none %.1f; want nothing per event", plain, plain0)
	}
	if per := (cross - cross0) / 200; per > 24 {
		t.Errorf("a translated stream allocates %.1f times per event; want at most 24", per)
	}
}
