package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// cannedTransport answers every upstream call with the same small chat
// completion, so the benchmark measures the gateway alone.
type cannedTransport struct{ body []byte }

func (c cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"}},
		Body:       io.NopCloser(bytes.NewReader(c.body)),
		Request:    r,
	}, nil
}

// BenchmarkHandler is the gateway's own cost per request: classify,
// admit, rewrite, forward, validate, relay, metrics and the request log
// (to io.Discard here), with no sockets.
func BenchmarkHandler(b *testing.B) { benchHandler(b, nil) }

// BenchmarkHandlerTraced is BenchmarkHandler with every request traced
// (two spans), recorded by the SDK and exported to nowhere: what tracing
// adds, run beside its baseline.
func BenchmarkHandlerTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(discardExporter{})))
	defer tp.Shutdown(context.Background())
	benchHandler(b, tp)
}

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

func benchHandler(b *testing.B, tp *sdktrace.TracerProvider) {
	cfg := config.Default("http://127.0.0.1:1")
	o := gateway.Options{
		Logger:    gateway.NewLogger(io.Discard, cfg.Log),
		Transport: cannedTransport{body: []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)},
	}
	if tp != nil {
		o.TracerProvider = tp
	}
	g, err := gateway.New(cfg, o)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	h := g.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkHandlerStructured is BenchmarkHandler for a request that
// declares a response_format schema: the same path plus compiling the
// schema (cached after the first) and checking the answer.
func BenchmarkHandlerStructured(b *testing.B) {
	cfg := config.Default("http://127.0.0.1:1")
	g, err := gateway.New(cfg, gateway.Options{
		Logger:    gateway.NewLogger(io.Discard, cfg.Log),
		Transport: cannedTransport{body: []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{\"name\":\"Ada\",\"age\":36}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	h := g.Handler()
	body := strings.Replace(openAISchemaBody(false), `"model":"gpt"`, `"model":"mock-gpt"`, 1)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Header().Get("X-Sluice-Validation") != "valid" {
			b.Fatalf("status %d, verdict %q: %s", rec.Code, rec.Header().Get("X-Sluice-Validation"), rec.Body)
		}
	}
}

// TestHandlerAllocs bounds what one non-streamed chat completion costs
// the gateway in allocations, with metrics and the request log on (the
// upstream canned, so the transport's own are not counted). It counted
// 139 before request bodies and answers were scanned without
// encoding/json (protocol.ParseBody, protocol.OutputTokens) and the
// upstream call's constant headers were made once, 73 after; the bound
// leaves a little room for the standard library's own changes.
func TestHandlerAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	serve := cannedHandler(t, config.Default("http://127.0.0.1:1"))
	one := func() {
		if status, body := serve(); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
	}
	for range 50 {
		one() // warm pools and label caches
	}
	const bound = 80
	n := testing.AllocsPerRun(500, one)
	t.Logf("%.1f allocations per request (the test's own request, recorder and canned answer included)", n)
	if n > bound {
		t.Errorf("%.1f allocations per request, want at most %d", n, bound)
	}
}

// cannedHandler builds a gateway on cfg whose every upstream call gets
// one fixed chat answer, with no sockets, for counting the handler's own
// allocations; serve sends it one chat request and returns the status
// and body.
func cannedHandler(t *testing.T, cfg *config.Config) (serve func() (int, string)) {
	t.Helper()
	g, err := gateway.New(cfg, gateway.Options{
		Logger:    gateway.NewLogger(io.Discard, cfg.Log),
		Transport: cannedTransport{body: []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	h := g.Handler()
	return func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Content-Type", "application/json")
		rec := &responseRecorder{header: http.Header{}}
		h.ServeHTTP(rec, req)
		return rec.status, rec.body.String()
	}
}
