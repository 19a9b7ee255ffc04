package gateway_test

import (
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// The client's tracestate carries vendor data of the client's tracing
// system (account ids, sampling hints); it stops at the gateway like its
// other headers. The provider hears the traceparent of the gateway's own
// call span, and nothing of the client's tracestate.
func TestTracestateIsNotForwarded(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	s := newStack(t, mock.Config{}, nil, tracing(exp))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	status, _, body := s.do("/v1/chat/completions", chatBody, map[string]string{
		"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01",
		"tracestate":  "acme=tenant-secret-42,other=x"})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	h := s.mock.LastRequest().Header
	if tp := h.Get("Traceparent"); len(tp) < 36 || tp[3:35] != traceID {
		t.Errorf("the provider got traceparent %q, want the trace %s", tp, traceID)
	}
	if ts := h.Values("Tracestate"); len(ts) != 0 {
		t.Errorf("the provider got the client's tracestate %q", ts)
	}
}
