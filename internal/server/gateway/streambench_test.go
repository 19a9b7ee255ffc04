package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// BenchmarkStreamRelay is what one streamed chat request costs through
// the gateway, its upstream answer a canned stream of n text events,
// compact or written as Python's json.dumps writes it (spaced), relayed
// as it is or translated from Anthropic's API. The cost of an event is
// the difference between n=400 and n=0, over 400 (docs/BENCHMARKS.md).
// The responses cases are a Responses API client's stream bridged
// through chat (responses_bridge.go), from an OpenAI-kind target without
// the API, and from an Anthropic one.
func BenchmarkStreamRelay(b *testing.B) {
	spaced := strings.NewReplacer(`":`, `": `, `,"`, `, "`).Replace
	noResponses := func(c *config.Config) { off := false; c.Providers[0].Responses = &off }
	const responsesReq = `{"model":"mock-gpt","stream":true,"input":"hi"}`
	for _, c := range []struct {
		name   string
		mutate func(*config.Config)
		body   func(int) string
		path   string
	}{
		{"openai/compact", nil, cannedStream, ""},
		{"openai/spaced", nil, func(n int) string { return spaced(cannedStream(n)) }, ""},
		{"translated/compact", openAIOnAnthropic, cannedAnthropicStream, ""},
		{"translated/spaced", openAIOnAnthropic, func(n int) string { return spaced(cannedAnthropicStream(n)) }, ""},
		{"responses-bridged/openai", noResponses, cannedStream, "/v1/responses"},
		{"responses-bridged/anthropic", openAIOnAnthropic, cannedAnthropicStream, "/v1/responses"},
	} {
		path, reqBody := "/v1/chat/completions", streamReq
		if c.path != "" {
			path, reqBody = c.path, responsesReq
		}
		for _, n := range []int{0, 400} {
			b.Run(c.name+"/events="+itoa(n), func(b *testing.B) {
				cfg := config.Default("http://127.0.0.1:1")
				if c.mutate != nil {
					c.mutate(cfg)
				}
				g, err := gateway.New(cfg, gateway.Options{
					Logger:    gateway.NewLogger(io.Discard, cfg.Log),
					Transport: sseTransport{body: c.body(n)},
				})
				if err != nil {
					b.Fatal(err)
				}
				defer g.Close()
				h := g.Handler()
				b.ReportAllocs()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, path, strings.NewReader(reqBody))
					req.Header.Set("Content-Type", "application/json")
					h.ServeHTTP(&flushDiscard{h: http.Header{}}, req)
				}
			})
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
