//go:build unix

package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/wire/tokens"
	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
)

// processCPU is the CPU time the test process has used, all threads (the
// garbage collector's included).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTokenShare sets the cost of counting a request's input tokens
// beside the gateway's own cost for that request, in one run. The request
// is a chat completion of about 2,000 tokens (9.6 kB, tokenstest.Chat).
//
//   - handler: the request through the gateway's handler in front of a
//     canned upstream, as BenchmarkHandler does, with no sockets (the
//     default configuration has no budgets, so the handler counts
//     nothing itself);
//   - count/cold: counting it with every message new to the cache;
//   - count/warm: the conversation's next turn, only the last message new
//     (about 250 tokens);
//   - count/hit: a body counted before, every text from the cache.
//
// Each reports the process's CPU per request (cpu-ns/op: all threads, so
// the garbage collector's work for that phase is in it) and the counting
// phases also report it as a percentage of the handler's (%handler-cpu).
// The handler runs first; run the whole benchmark, not one phase alone,
// for the percentages.
func BenchmarkTokenShare(b *testing.B) {
	enc, _ := tokens.EncodingFor("gpt-4o")
	tokens.Preload(enc)
	var handlerCPU float64 // CPU ns per request, from the handler phase

	// loop runs b.Loop with step, and reports the process's CPU per
	// iteration.
	loop := func(b *testing.B, step func(i uint64)) float64 {
		b.ReportAllocs()
		var i uint64
		start := processCPU()
		for b.Loop() {
			i++
			step(i)
		}
		cpu := float64(processCPU()-start) / float64(b.N)
		b.ReportMetric(cpu, "cpu-ns/op")
		return cpu
	}

	b.Run("handler", func(b *testing.B) {
		cfg := config.Default("http://127.0.0.1:1")
		g, err := gateway.New(cfg, gateway.Options{
			Logger:    gateway.NewLogger(io.Discard, cfg.Log),
			Transport: cannedTransport{body: []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1982,"completion_tokens":1,"total_tokens":1983}}`)},
		})
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		h := g.Handler()
		body := tokenstest.NewChat("mock-gpt", 1).Body
		b.SetBytes(int64(len(body)))
		handlerCPU = loop(b, func(uint64) {
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		})
	})

	count := func(name string, stamp func(ch *tokenstest.Chat, i uint64)) {
		b.Run("count/"+name, func(b *testing.B) {
			c := tokens.NewCounter(0)
			ch := tokenstest.NewChat("mock-gpt", 1)
			if _, _, err := c.Request(enc, false, ch.Body); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(ch.Body)))
			cpu := loop(b, func(i uint64) {
				stamp(ch, i)
				if _, _, err := c.Request(enc, false, ch.Body); err != nil {
					b.Fatal(err)
				}
			})
			if handlerCPU > 0 {
				b.ReportMetric(100*cpu/handlerCPU, "%handler-cpu")
			}
		})
	}
	count("cold", (*tokenstest.Chat).Stamp)
	count("warm", (*tokenstest.Chat).StampLast)
	count("hit", func(*tokenstest.Chat, uint64) {})
}
