package gateway

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A caller's sampled traceparent records its requests at most
// parent_sampled_per_second a second: the header and the trace ID it
// carries are the client's, so they cannot make every request of theirs
// cost a recorded span. New traces (no parent) and unsampled parents are
// the ratio's to decide, and the cap refills with time.
func TestCallerSampledTracesAreCapped(t *testing.T) {
	now := time.Unix(1700000000, 0)
	s := newCallerCapped(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(1)), 100, func() time.Time { return now })
	remote := func(sampled bool) sdktrace.SamplingParameters {
		var tid trace.TraceID
		tid[15] = 1 // a trace ID any ratio keeps
		flags := trace.TraceFlags(0)
		if sampled {
			flags = trace.FlagsSampled
		}
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1}, TraceFlags: flags, Remote: true})
		return sdktrace.SamplingParameters{ParentContext: trace.ContextWithRemoteSpanContext(context.Background(), sc), TraceID: tid}
	}
	recorded := func(n int, p sdktrace.SamplingParameters) int {
		k := 0
		for range n {
			if s.ShouldSample(p).Decision == sdktrace.RecordAndSample {
				k++
			}
		}
		return k
	}
	if k := recorded(1000, remote(true)); k != 100 {
		t.Fatalf("1,000 caller-sampled requests at once: %d recorded, want the cap's 100", k)
	}
	root := sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: trace.TraceID{1}}
	if k := recorded(50, root); k != 50 {
		t.Errorf("new traces at ratio 1 past the cap: %d of 50 recorded; the cap is only for callers' say-so", k)
	}
	if k := recorded(50, remote(false)); k != 0 {
		t.Errorf("unsampled parents: %d recorded", k)
	}
	now = now.Add(500 * time.Millisecond)
	if k := recorded(1000, remote(true)); k != 50 {
		t.Errorf("half a second later: %d recorded, want 50", k)
	}
}
