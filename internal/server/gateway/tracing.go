package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Traces (config.Tracing). A request is one server span, named for its
// GenAI operation and model ("chat gpt-4o"), that continues the client's
// traceparent; each upstream call is a client span under it, so a hedge,
// a rescue or a retry is a second child. The attributes are
// OpenTelemetry's GenAI semantic conventions (gen_ai.*) and Sluice's own
// (sluice.*): priority, queue wait, outcome and shed reason, the target,
// and what made a second call. No client or provider secret, prompt or
// answer text is recorded. With tracing off the gateway holds no tracer
// and a request pays one nil check.

// tracerName is the instrumentation scope of Sluice's spans.
const tracerName = "github.com/sluice-gw/sluice/internal/server/gateway"

// propagator reads the client's W3C traceparent (and tracestate, kept on
// the request's span for the operator's collector) and writes only a
// traceparent upstream: a tracestate is the client's tracing vendor's
// data (account ids, sampling hints), which a provider has no business
// with, so it stops at the gateway like the client's other headers.
var propagator = parentOnly{}

// parentOnly is W3C trace context that injects the traceparent alone.
type parentOnly struct{ propagation.TraceContext }

func (p parentOnly) Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	var m propagation.MapCarrier = map[string]string{}
	p.TraceContext.Inject(ctx, m)
	if tp := m.Get("traceparent"); tp != "" {
		carrier.Set("traceparent", tp)
	}
}

// NewTracerProvider builds the OpenTelemetry SDK's tracer provider for a
// config that turns tracing on: a batching OTLP/HTTP exporter to the
// collector, parent-based sampling at the configured ratio. The caller
// shuts it down, which flushes what is batched.
func NewTracerProvider(t config.Tracing) (*sdktrace.TracerProvider, error) {
	u, err := url.Parse(t.Endpoint)
	if err != nil {
		return nil, err
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithURLPath(strings.TrimSuffix(u.Path, "/") + "/v1/traces")}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	if len(t.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(t.Headers))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(attribute.String("service.name", t.ServiceName))
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(newCallerCapped(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.SampleRatio)), t.ParentSampledPerSecond, time.Now)),
	), nil
}

// callerCapped is a Sampler that records at most perSecond requests a
// second (a burst of one second's worth) on their caller's say-so: a
// remote parent span context marked sampled. Its other decisions are
// inner's. The traceparent is the client's header, and so is the trace
// ID a ratio judges, so neither may decide alone how much of the
// gateway's work a client's requests cost.
type callerCapped struct {
	inner     sdktrace.Sampler
	perSecond float64
	now       func() time.Time

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newCallerCapped(inner sdktrace.Sampler, perSecond float64, now func() time.Time) *callerCapped {
	return &callerCapped{inner: inner, perSecond: perSecond, now: now, tokens: perSecond, last: now()}
}

func (s *callerCapped) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	res := s.inner.ShouldSample(p)
	parent := trace.SpanContextFromContext(p.ParentContext)
	if res.Decision != sdktrace.RecordAndSample || !parent.IsRemote() || !parent.IsSampled() || s.take() {
		return res
	}
	return sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: parent.TraceState()}
}

// take spends one of the second's recordings, if one is left.
func (s *callerCapped) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	burst := s.perSecond
	if burst > 0 {
		burst = max(burst, 1)
	}
	s.tokens = min(burst, s.tokens+now.Sub(s.last).Seconds()*s.perSecond)
	s.last = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

func (s *callerCapped) Description() string {
	return fmt.Sprintf("CallerCapped{%s,perSecond:%g}", s.inner.Description(), s.perSecond)
}

// operation is the GenAI operation an endpoint performs.
func operation(ep protocol.Endpoint) string {
	switch ep.Name {
	case "embeddings":
		return "embeddings"
	case "completions":
		return "text_completion"
	}
	return "chat"
}

// genAIProvider is gen_ai.provider.name for a provider's dialect.
func genAIProvider(d protocol.Dialect) string {
	if d == protocol.Anthropic {
		return "anthropic"
	}
	return "openai"
}

// tracing makes the request and upstream call spans. A nil *tracing is
// tracing off: each method then does nothing (and a request pays one nil
// check).
type tracing struct {
	tracer    trace.Tracer
	providers map[string]*provider // by name, for the provider's dialect
	now       func() time.Time
}

// newTracing is the tracing of tp's tracer; nil when tp is.
func newTracing(tp trace.TracerProvider, providers map[string]*provider, now func() time.Time) *tracing {
	if tp == nil {
		return nil
	}
	return &tracing{tracer: tp.Tracer(tracerName), providers: providers, now: now}
}

// request starts the request's span, continuing the client's
// traceparent, and returns r carrying it, so the upstream calls' spans
// are its children.
func (t *tracing) request(r *http.Request, x *exchange) *http.Request {
	if t == nil {
		return r
	}
	ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, x.span = t.tracer.Start(ctx, operation(x.endpoint), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(x.start))
	return r.WithContext(ctx)
}

// endRequest records what became of the request and ends its span.
func (t *tracing) endRequest(x *exchange) {
	s := x.span
	if t == nil || s == nil {
		return
	}
	model := x.requested
	if model == "" {
		model = x.model
	}
	if model != "" {
		s.SetName(operation(x.endpoint) + " " + model)
	}
	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs,
		attribute.String("gen_ai.operation.name", operation(x.endpoint)),
		attribute.String("gen_ai.request.model", model),
		attribute.Int("http.response.status_code", x.status),
		attribute.String("sluice.priority", x.priority.String()),
		attribute.String("sluice.outcome", x.outcome),
		attribute.Int64("sluice.queue_wait_ms", x.waited.Milliseconds()),
		attribute.Int("sluice.attempts", x.attempts),
	)
	if x.reason != "" {
		attrs = append(attrs, attribute.String("sluice.reason", x.reason))
	}
	if x.provider != "" {
		attrs = append(attrs, attribute.String("sluice.provider", x.provider))
	}
	if x.upstreamModel != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.model", x.upstreamModel))
	}
	if p := t.providers[x.provider]; p != nil {
		attrs = append(attrs, attribute.String("gen_ai.provider.name", genAIProvider(p.dialect)))
	}
	if x.inputTokens > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.usage.input_tokens", x.inputTokens))
	}
	if x.outputTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.usage.output_tokens", x.outputTokens), attribute.Bool("sluice.usage_reported", x.usageKnown))
	}
	if x.finish != "" {
		// The provider's own word: made safe as its request id is.
		attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{x.creds.scrubber().logSafe(x.finish)}))
	}
	if x.degraded != "" {
		attrs = append(attrs, attribute.String("sluice.degraded", x.degraded))
	}
	s.SetAttributes(attrs...)
	if x.status >= 500 || x.outcome == outcomeInternal {
		s.SetStatus(codes.Error, x.outcome)
	}
	s.End(trace.WithTimestamp(t.now()))
}

// attempt starts an upstream call's span under the request's and
// returns the context the call runs in. The call's request carries the
// span's traceparent, so a provider that traces (vLLM, a collector in
// front of it) joins the trace.
func (t *tracing) attempt(a *attempt, ep protocol.Endpoint) context.Context {
	if t == nil {
		return a.ctx
	}
	ctx, span := t.tracer.Start(a.ctx, operation(ep)+" "+a.t.model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", operation(ep)),
			attribute.String("gen_ai.request.model", a.t.model),
			attribute.String("gen_ai.provider.name", genAIProvider(a.t.provider.dialect)),
			attribute.String("sluice.provider", a.t.provider.name),
			attribute.Int("sluice.attempt", a.n),
		))
	if a.second != "" {
		span.SetAttributes(attribute.String("sluice.second_call", a.second))
	}
	a.span = span
	return ctx
}

// endAttemptSpan ends an upstream call's span: status is the provider's
// HTTP status (0: none came), outcome what became of the call.
func (a *attempt) endAttemptSpan(outcome string) {
	if a.span == nil {
		return
	}
	if a.resp != nil {
		a.span.SetAttributes(attribute.Int("http.response.status_code", a.resp.StatusCode))
	}
	a.span.SetAttributes(attribute.String("sluice.outcome", outcome))
	if a.err != nil && outcome != "cancelled" {
		// A transport's or a codec's error may quote what the provider
		// sent.
		a.span.SetStatus(codes.Error, string(a.creds.scrubber().text([]byte(a.err.Error()))))
	}
	a.span.End()
	a.span = nil
}
