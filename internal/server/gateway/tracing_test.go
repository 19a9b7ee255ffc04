package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

func tracing(exp *tracetest.InMemoryExporter) func(*gateway.Options) {
	return func(o *gateway.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	}
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// A hedged request is one server span that continues the client's
// traceparent, with the GenAI attributes and Sluice's own, and two client
// spans under it: the first call, cancelled, and the hedge that answered.
// The provider receives the trace too.
func TestTracesShowTheHedge(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	backup, addBackup := withBackup(t, mock.Config{OutputTokens: mock.TokenRange{Min: 3}})
	s := newStack(t, mock.Config{TTFT: 2e9, OutputTokens: mock.TokenRange{Min: 3}}, func(c *config.Config) {
		c.Hedging = config.Budget{Budget: 1, Burst: 10}
		addBackup(c)
		c.Models[0].HedgeAfter = config.HedgeDelay{Fixed: config.Duration(100e6)}
	}, tracing(exp))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	status, _, body := s.do("/v1/chat/completions", chatBody, map[string]string{
		"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01", "X-Sluice-Priority": "background"})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	waitFor(t, "the request's span and both calls' spans", func() bool { return len(exp.GetSpans()) == 3 })
	var server tracetest.SpanStub
	var calls []tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.SpanKind == trace.SpanKindServer {
			server = sp
		} else {
			calls = append(calls, sp)
		}
	}
	if got := server.SpanContext.TraceID().String(); got != traceID {
		t.Errorf("the request's trace %s, want the client's %s", got, traceID)
	}
	if server.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("the request's span has parent %s, want the client's span", server.Parent.SpanID())
	}
	if server.Name != "chat mock-gpt" {
		t.Errorf("span name %q", server.Name)
	}
	a := attrs(server)
	for k, want := range map[attribute.Key]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "mock-gpt", "gen_ai.response.model": "backup-model",
		"gen_ai.provider.name": "openai", "sluice.priority": "background", "sluice.provider": "backup", "sluice.outcome": "ok",
	} {
		if a[k].AsString() != want {
			t.Errorf("%s = %q, want %q", k, a[k].AsString(), want)
		}
	}
	if a["sluice.attempts"].AsInt64() != 2 || a["gen_ai.usage.output_tokens"].AsInt64() != 3 || a["http.response.status_code"].AsInt64() != 200 {
		t.Errorf("attempts %v, output tokens %v, status %v", a["sluice.attempts"], a["gen_ai.usage.output_tokens"], a["http.response.status_code"])
	}
	if fr := a["gen_ai.response.finish_reasons"].AsStringSlice(); len(fr) != 1 || fr[0] != "stop" {
		t.Errorf("gen_ai.response.finish_reasons %v, want [stop]", fr)
	}
	if _, ok := a["sluice.queue_wait_ms"]; !ok {
		t.Error("no sluice.queue_wait_ms")
	}
	if len(calls) != 2 {
		t.Fatalf("%d call spans, want 2", len(calls))
	}
	byAttempt := map[int64]map[attribute.Key]attribute.Value{}
	for _, c := range calls {
		if c.Parent.SpanID() != server.SpanContext.SpanID() || c.SpanKind != trace.SpanKindClient {
			t.Errorf("call span %q is not a client child of the request's span", c.Name)
		}
		ca := attrs(c)
		byAttempt[ca["sluice.attempt"].AsInt64()] = ca
	}
	first, hedge := byAttempt[0], byAttempt[1]
	if first["sluice.provider"].AsString() != "mock-openai" || first["sluice.outcome"].AsString() != "cancelled" {
		t.Errorf("first call: provider %v, outcome %v; want mock-openai, cancelled", first["sluice.provider"], first["sluice.outcome"])
	}
	if hedge["sluice.second_call"].AsString() != "hedge" || hedge["sluice.provider"].AsString() != "backup" || hedge["http.response.status_code"].AsInt64() != 200 {
		t.Errorf("hedge: %v", hedge)
	}
	if tp := backup.LastRequest().Header.Get("Traceparent"); len(tp) < 36 || tp[3:35] != traceID {
		t.Errorf("the provider got traceparent %q, want the trace %s", tp, traceID)
	}
}

// Without a TracerProvider nothing is traced and no traceparent goes
// upstream: the client's stops at the gateway, like its other headers.
func TestNoTracingSendsNoTraceparent(t *testing.T) {
	s := newStack(t, mock.Config{}, nil)
	s.do("/v1/chat/completions", chatBody, map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	if tp := s.mock.LastRequest().Header.Get("Traceparent"); tp != "" {
		t.Errorf("traceparent %q reached the provider with tracing off", tp)
	}
}

// With tracing: in the config, the host exports over OTLP/HTTP to the
// collector, with the configured headers, and flushes what is batched at
// shutdown.
func TestHostExportsTracesOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var auth string
	var bytesIn int
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths, auth, bytesIn = append(paths, r.URL.Path), r.Header.Get("Authorization"), bytesIn+len(b)
		mu.Unlock()
	}))
	t.Cleanup(collector.Close)
	hs := newHostStack(t, mock.Config{}, func(c *config.Config) {
		c.Tracing = config.Tracing{Endpoint: collector.URL, SampleRatio: 1, ServiceName: "sluice-test", Headers: map[string]string{"Authorization": "Bearer collector-key"}}
	})
	if status, body := postStatus(t, hs.url, chatBody); status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.h.Shutdown(ctx, 0)
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || paths[0] != "/v1/traces" || auth != "Bearer collector-key" || bytesIn == 0 {
		t.Errorf("collector got %v (%d bytes), Authorization %q; want spans posted to /v1/traces with the configured header", paths, bytesIn, auth)
	}
}

func TestTracingConfig(t *testing.T) {
	base := "providers: [{name: p, kind: openai, base_url: \"http://127.0.0.1:1/v1\"}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n"
	c, err := config.Parse([]byte(base), "t.yaml")
	if err != nil || c.Tracing.On() || c.Tracing.SampleRatio != 1 || c.Tracing.ServiceName != "sluice" || c.Tracing.ParentSampledPerSecond != 100 {
		t.Fatalf("defaults: %+v, %v; want off, ratio 1, 100 caller-sampled a second, service sluice", c.Tracing, err)
	}
	for yaml, want := range map[string]string{
		"tracing: {endpoint: collector:4318}\n":                               `tracing.endpoint: "collector:4318" is not an http(s) URL`,
		"tracing: {endpoint: http://c:4318, sample_ratio: 1.5}\n":             "tracing.sample_ratio: 1.5 must be above 0 and at most 1",
		"tracing: {endpoint: http://c:4318, parent_sampled_per_second: -1}\n": "tracing.parent_sampled_per_second: -1 must not be negative",
	} {
		if _, err := config.Parse([]byte(base+yaml), "t.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", yaml, err, want)
		}
	}
}
