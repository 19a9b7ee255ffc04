package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// A client that disconnects cancels its upstream call within 100 ms:
// while waiting for the first byte, and mid-stream.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	s := newStack(t, mock.Config{TTFT: 10 * time.Millisecond, TPOT: 50 * time.Millisecond}, nil)

	t.Run("before first byte", func(t *testing.T) {
		s.mock.ResetStats()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			waitFor(t, "upstream call", func() bool { return s.mock.Stats().InFlight == 1 })
			cancel()
		}()
		_, err := s.post(ctx, "/v1/chat/completions", chatBody, map[string]string{"X-Mock-Latency": "10s"})
		if err == nil {
			t.Fatal("request succeeded; want it cancelled")
		}
		cancelled := time.Now()
		waitFor(t, "upstream cancel", func() bool { return s.mock.Stats().CancelledByClient == 1 })
		if d := time.Since(cancelled); d > 100*time.Millisecond {
			t.Errorf("upstream saw the cancel after %v; want under 100ms", d)
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		s.mock.ResetStats()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp, err := s.post(ctx, "/v1/chat/completions",
			`{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			map[string]string{"X-Mock-Output-Tokens": "200"})
		if err != nil {
			t.Fatal(err)
		}
		events := 0
		sseEvents(resp.Body, func(string) bool { events++; return events < 3 })
		cancel()
		resp.Body.Close()
		cancelled := time.Now()
		waitFor(t, "upstream cancel", func() bool { return s.mock.Stats().CancelledByClient == 1 })
		if d := time.Since(cancelled); d > 100*time.Millisecond {
			t.Errorf("upstream saw the cancel after %v; want under 100ms", d)
		}
	})
}

// X-Sluice-Timeout shortens the deadline; the deadline cancels upstream
// and the client gets a 504 in its dialect.
func TestClientTimeoutHeader(t *testing.T) {
	s := newStack(t, mock.Config{}, nil)
	start := time.Now()
	status, _, body := s.do("/v1/chat/completions", chatBody, map[string]string{
		"X-Sluice-Timeout": "150ms", "X-Mock-Latency": "5s"})
	took := time.Since(start)
	if status != 504 || errorType(t, body) != "timeout_error" {
		t.Fatalf("status %d: %s", status, body)
	}
	if took < 150*time.Millisecond || took > time.Second {
		t.Errorf("504 after %v, want it at the 150ms deadline, not the upstream's 5s", took)
	}
	waitFor(t, "upstream cancel", func() bool { return s.mock.Stats().CancelledByClient == 1 })
	if got := s.mock.LastRequest().Header.Get("X-Sluice-Timeout"); got == "" || got == "150ms" {
		t.Errorf("upstream X-Sluice-Timeout = %q; want the remaining budget", got)
	}
}

// The official SDKs send their per-attempt timeout in seconds as
// X-Stainless-Timeout; without X-Sluice-Timeout it is the deadline.
// Neither can lengthen the route's timeout, and nonsense is a 400.
func TestSDKTimeoutHeader(t *testing.T) {
	s := newStack(t, mock.Config{}, nil)
	start := time.Now()
	status, _, body := s.do("/v1/chat/completions", chatBody, map[string]string{
		"X-Stainless-Timeout": "0.2", "X-Mock-Latency": "5s"})
	if took := time.Since(start); status != 504 || took > 2*time.Second {
		t.Fatalf("status %d after %v: %s; want a 504 at the SDK's 200 ms", status, took, body)
	}
	// X-Sluice-Timeout wins over the SDK's.
	start = time.Now()
	status, _, _ = s.do("/v1/chat/completions", chatBody, map[string]string{
		"X-Stainless-Timeout": "600", "X-Sluice-Timeout": "150ms", "X-Mock-Latency": "5s"})
	if took := time.Since(start); status != 504 || took > 2*time.Second {
		t.Fatalf("status %d after %v; want X-Sluice-Timeout's 150 ms", status, took)
	}
	for _, v := range []string{"soon", "-1", "NaN", "1e300"} {
		status, _, body := s.do("/v1/chat/completions", chatBody, map[string]string{"X-Stainless-Timeout": v})
		if status != 400 || !strings.Contains(string(body), "X-Stainless-Timeout") {
			t.Errorf("X-Stainless-Timeout %q: status %d: %s; want a 400 naming the header", v, status, body)
		}
	}
}

// Streams that break after the headers went out end with an error event
// in the client's dialect, and release their slot.
func TestStreamCutMidway(t *testing.T) {
	s := newStack(t, mock.Config{TPOT: time.Millisecond}, nil)
	for _, c := range []struct{ name, path, body, want string }{
		{"openai truncate", "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"upstream_error"`},
		{"anthropic truncate", "/v1/messages", `{"model":"mock-claude","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, `event: error`},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := s.do(c.path, c.body, map[string]string{"X-Mock-Fail": "truncate:3", "X-Mock-Output-Tokens": "10", "anthropic-version": "2023-06-01"})
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			if !strings.Contains(string(body), c.want) || !strings.Contains(string(body), "broke off the stream") {
				t.Fatalf("stream does not end with an error event:\n%s", body)
			}
		})
	}
}

// panicTransport stands in for a bug anywhere on the upstream path.
type panicTransport struct{}

func (panicTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("boom") }

func TestPanicReleasesSlotAndAnswers500(t *testing.T) {
	s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) { o.Transport = panicTransport{} })
	for range 3 {
		status, _, body := s.do("/v1/chat/completions", chatBody, nil)
		if status != 500 || errorType(t, body) != "server_error" {
			t.Fatalf("status %d: %s", status, body)
		}
	}
	if sn := s.gw.Runner().Snapshot(); sn.InFlight != 0 {
		t.Fatalf("in flight %d after panics", sn.InFlight)
	}
}

// With hedging on, the upstream call runs on its own goroutine: a panic
// there must become a 500, not end the process, and release the slot.
func TestPanicInHedgedCallIsContained(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Models[0].HedgeAfter = config.HedgeDelay{Fixed: config.Duration(time.Second)}
	}, func(o *gateway.Options) { o.Transport = panicTransport{} })
	status, _, body := s.do("/v1/chat/completions", chatBody, nil)
	if status != 500 || errorType(t, body) != "server_error" {
		t.Fatalf("status %d: %s", status, body)
	}
}

// The upstream hangs; the client gives up; everything is released.
func TestUpstreamHang(t *testing.T) {
	s := newStack(t, mock.Config{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	resp, err := s.post(ctx, "/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "hang"})
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.Fatalf("status %d; want the client's own timeout", resp.StatusCode)
	}
	waitFor(t, "upstream cancel", func() bool { return s.mock.Stats().CancelledByClient == 1 })
}
