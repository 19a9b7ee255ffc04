package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// Translation before admission (issue #22 item 1). A body of many tiny
// messages, sent to an OpenAI-facing model whose provider speaks
// Anthropic's API, costs the gateway far more than its bytes to count and
// translate. A request its budget refuses must not pay that, nor make the
// gateway pay it; a body past server.max_messages is refused at parse;
// and translation itself stays within a small multiple of the body.

// tinyMessages is an OpenAI chat body for mock-gpt of n one-character
// messages, alternating user and assistant: about 30 bytes a message.
func tinyMessages(n int) []byte {
	var b bytes.Buffer
	b.Grow(n*32 + 64)
	b.WriteString(`{"model":"mock-gpt","max_tokens":16,"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%2 == 0 {
			b.WriteString(`{"role":"user","content":"a"}`)
		} else {
			b.WriteString(`{"role":"assistant","content":"b"}`)
		}
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// anthropicAnswer is a whole Messages API answer, for a canned upstream.
const anthropicAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"mock-claude-sonnet","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`

// crossHandler is a gateway's handler with mock-gpt served by the
// Anthropic-kind provider through a canned upstream (no sockets), after
// mutate.
func crossHandler(t testing.TB, mutate func(*config.Config)) http.Handler {
	t.Helper()
	cfg := config.Default("http://127.0.0.1:1")
	openAIOnAnthropic(cfg)
	if mutate != nil {
		mutate(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{
		Logger:    gateway.NewLogger(io.Discard, cfg.Log),
		Transport: cannedTransport{body: []byte(anthropicAnswer)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g.Handler()
}

// serveCounted sends body to h as key's client and returns the answer
// and the bytes the process allocated while h served it.
func serveCounted(h http.Handler, key string, body []byte) (*httptest.ResponseRecorder, uint64) {
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	return rec, after.TotalAlloc - before.TotalAlloc
}

// A key whose budget is already spent is refused before its body is
// counted or translated: the refusal costs about the body's read, where
// counting and translating 90,000 messages cost over a hundred times
// the body.
func TestSpentKeyRefusedBeforeTranslation(t *testing.T) {
	h := crossHandler(t, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "small", SHA256: config.KeyHash("sk-small"), Limits: config.Limits{RPM: 1}}}
	})
	if rec, _ := serveCounted(h, "sk-small", tinyMessages(2)); rec.Code != 200 {
		t.Fatalf("first request: %d %s", rec.Code, rec.Body)
	}
	body := tinyMessages(90_000)
	rec, alloc := serveCounted(h, "sk-small", body)
	if rec.Code != 429 || !strings.Contains(rec.Body.String(), "requests") {
		t.Fatalf("a request on a spent key: %d %s; want 429 naming the requests budget", rec.Code, rec.Body)
	}
	t.Logf("body %d bytes; the refusal allocated %d bytes (%.1fx)", len(body), alloc, float64(alloc)/float64(len(body)))
	if limit := 4 * uint64(len(body)); alloc > limit {
		t.Errorf("the refusal allocated %d bytes for a %d-byte body: more than %d, so the body was counted or translated first", alloc, len(body), limit)
	}
}

// A request larger than its key's whole input budget is refused (413)
// once counted, before it is translated.
func TestOversizedForBudgetRefusedBeforeTranslation(t *testing.T) {
	h := crossHandler(t, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "small", SHA256: config.KeyHash("sk-small"), Limits: config.Limits{ITPM: 1000}}}
	})
	body := tinyMessages(90_000)
	rec, alloc := serveCounted(h, "sk-small", body)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), "input tokens") {
		t.Fatalf("a request above its key's input budget: %d %s; want 413 naming input tokens", rec.Code, rec.Body)
	}
	t.Logf("body %d bytes; the refusal allocated %d bytes (%.1fx)", len(body), alloc, float64(alloc)/float64(len(body)))
	if limit := 6 * uint64(len(body)); alloc > limit {
		t.Errorf("the refusal allocated %d bytes for a %d-byte body: more than %d, so the body was translated first", alloc, len(body), limit)
	}
}

// 280,000 one-character messages (8.4 MB, inside max_body_bytes) are
// refused at parse, 413, with what to fix, at about the cost of reading
// the body.
func TestTooManyMessagesRefused(t *testing.T) {
	h := crossHandler(t, nil)
	body := tinyMessages(280_000)
	rec, alloc := serveCounted(h, "", body)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), "280000 messages") || !strings.Contains(rec.Body.String(), "server.max_messages") {
		t.Fatalf("280,000 messages: %d %s; want 413 naming the count and server.max_messages", rec.Code, rec.Body)
	}
	t.Logf("body %d bytes; the refusal allocated %d bytes (%.1fx)", len(body), alloc, float64(alloc)/float64(len(body)))
	if limit := 4 * uint64(len(body)); alloc > limit {
		t.Errorf("the refusal allocated %d bytes for a %d-byte body: more than %d", alloc, len(body), limit)
	}
	// Deeper than server.max_json_depth: 400.
	deep := []byte(`{"model":"mock-gpt","messages":[{"role":"user","content":"a"}],"metadata":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `}`)
	if rec, _ := serveCounted(h, "", deep); rec.Code != 400 || !strings.Contains(rec.Body.String(), "server.max_json_depth") {
		t.Fatalf("a body nested 200 deep: %d %s; want 400 naming server.max_json_depth", rec.Code, rec.Body)
	}
}

// BenchmarkTinyMessages sends one body of 280,000 one-character messages
// (9.1 MB) through the gateway's handler, in one run:
//
//   - untranslated: mock-gpt on its OpenAI-kind provider, the baseline;
//   - translated: mock-gpt on the Anthropic-kind provider, the body
//     translated to Anthropic's API;
//   - spent_key: translated, but the key's budget is spent: refused
//     before the body is counted or translated.
//
// server.max_messages is raised past the body so that it is served (by
// default it is refused at parse, 413). Each reports bytes allocated per
// request (B/op) and that as a multiple of the body (x-body). The
// tokens are counted in every case (the key has a budget).
func BenchmarkTinyMessages(b *testing.B) {
	body := tinyMessages(280_000)
	const openAIAnswer = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	run := func(b *testing.B, h http.Handler, key string, want int) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != want {
				b.Fatalf("status %d, want %d: %.300s", rec.Code, want, rec.Body)
			}
		}
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(body)), "x-body")
	}
	cfg := func(rpm int64) func(*config.Config) {
		return func(c *config.Config) {
			c.Server.MaxMessages = 300_000
			c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{RPM: rpm}}}
		}
	}
	b.Run("untranslated", func(b *testing.B) {
		c := config.Default("http://127.0.0.1:1")
		cfg(1 << 30)(c)
		g, err := gateway.New(c, gateway.Options{Logger: gateway.NewLogger(io.Discard, c.Log), Transport: cannedTransport{body: []byte(openAIAnswer)}})
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		run(b, g.Handler(), "sk-k", 200)
	})
	b.Run("translated", func(b *testing.B) {
		run(b, crossHandler(b, cfg(1<<30)), "sk-k", 200)
	})
	b.Run("spent_key", func(b *testing.B) {
		h := crossHandler(b, cfg(1))
		if rec, _ := serveCounted(h, "sk-k", tinyMessages(2)); rec.Code != 200 {
			b.Fatalf("first request: %d", rec.Code)
		}
		run(b, h, "sk-k", 429)
	})
}
