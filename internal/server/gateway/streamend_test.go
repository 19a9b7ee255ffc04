package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// chunkedTransport answers every call with an SSE stream written in the
// given pieces, a few milliseconds apart, and then closes it.
type chunkedTransport struct{ pieces []string }

func (c chunkedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		for _, p := range c.pieces {
			pw.Write([]byte(p))
			time.Sleep(2 * time.Millisecond)
		}
		pw.Close()
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: r}, nil
}

const streamReq = `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// A stream counts as healthy only when it ended properly. One that closes
// without [DONE] after its first token, or carries an event that is not
// JSON, is a failure for the provider's breaker, and the client gets a
// clean error event instead of the rest; one that fails before its first
// token is a 502 (and, with a backup, would be retried).
func TestStreamsMustEndProperly(t *testing.T) {
	const token = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
	cases := []struct {
		name     string
		pieces   []string
		status   int
		want     string // in the body
		wantNot  string // not in the body
		errors   int    // breaker errors it counts
		outcome  string
		reason   string
		wholeRel bool // relayed exactly as sent
	}{
		{name: "ends with DONE", pieces: []string{token, token, "data: [DONE]\n\n"}, status: 200, outcome: "ok", wholeRel: true},
		{name: "closes without DONE", pieces: []string{token, token}, status: 200, want: "ended the stream before it was complete",
			errors: 1, outcome: "upstream_error", reason: "stream_unterminated"},
		{name: "garbage after the first token", pieces: []string{token, "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}\n\n", token, "data: [DONE]\n\n"},
			status: 200, want: "malformed event", wantNot: `"content":"x"`, errors: 1, outcome: "upstream_error", reason: "stream_malformed"},
		// Failed before a byte went out, these are retried once (on the
		// same provider, there being no other), and both calls count.
		{name: "garbage before any token", pieces: []string{"<html><body>Bad Gateway</body></html>\n\n"}, status: 502,
			want: "malformed stream", errors: 2, outcome: "upstream_error", reason: "upstream_malformed"},
		{name: "html with no events at all", pieces: []string{"<html>"}, status: 502,
			want: "malformed stream", errors: 2, outcome: "upstream_error", reason: "upstream_malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, mock.Config{}, func(cfg *config.Config) {
				cfg.Log.Format = "json"
				cfg.Providers[0].Breaker = &config.Breaker{MinCalls: 100}
			}, func(o *gateway.Options) { o.Transport = chunkedTransport{c.pieces} })
			status, _, body := s.do("/v1/chat/completions", streamReq, nil)
			if status != c.status || !strings.Contains(string(body), c.want) || (c.wantNot != "" && strings.Contains(string(body), c.wantNot)) {
				t.Fatalf("status %d, body %q; want %d with %q", status, body, c.status, c.want)
			}
			if c.wholeRel && string(body) != strings.Join(c.pieces, "") {
				t.Fatalf("relayed %q, want the stream as sent", body)
			}
			waitFor(t, "the log line", func() bool { return len(s.requestLog()) == 1 })
			l := s.requestLog()[0]
			if l.Outcome != c.outcome || l.Reason != c.reason {
				t.Errorf("logged %s/%s, want %s/%s", l.Outcome, l.Reason, c.outcome, c.reason)
			}
			if st := s.gw.Runner().BreakerStats()[0]; st.Errors != c.errors || st.State != breaker.Closed {
				t.Errorf("breaker counted %d errors, want %d", st.Errors, c.errors)
			}
		})
	}
}

// The Anthropic dialect's terminator is message_stop; a stream cut
// before it ends with an error event in Anthropic's own shape.
func TestAnthropicStreamCutBeforeMessageStop(t *testing.T) {
	s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) {
		o.Transport = chunkedTransport{[]string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
		}}
	})
	status, _, body := s.do("/v1/messages", `{"model":"mock-claude","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"anthropic-version": "2023-06-01"})
	if status != 200 || !strings.HasSuffix(string(body), "\n\n") || !strings.Contains(string(body), "event: error\ndata: {\"error\":") {
		t.Fatalf("status %d: %q", status, body)
	}
}

// An event larger than the relay's small buffer still reaches the client
// whole; a stream that breaks inside an event too large to hold is
// aborted rather than have an error event glued to half an event; and a
// last event sent without its blank line (the terminator, or the
// provider's own error event) gets one.
func TestStreamEventFraming(t *testing.T) {
	const token = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
	big := "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("x", 20_000) + "\"}}]}\n\n"
	huge := "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("y", 100_000)
	cases := []struct {
		name    string
		pieces  []string
		want    string // the whole body, when it must be exact
		aborted bool
	}{
		{name: "a 20 KB event", pieces: []string{token, big[:7000], big[7000:], "data: [DONE]\n\n"}, want: token + big + "data: [DONE]\n\n"},
		{name: "DONE without its blank line", pieces: []string{token, "data: [DONE]"}, want: token + "data: [DONE]\n\n"},
		{name: "cut inside an event too large to hold", pieces: []string{token, huge}, aborted: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) { o.Transport = chunkedTransport{c.pieces} })
			resp, err := s.post(t.Context(), "/v1/chat/completions", streamReq, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if c.aborted {
				if rerr == nil || strings.Contains(string(body), `"error"`) {
					t.Fatalf("read %d bytes, err %v; want the connection aborted, no error event glued on", len(body), rerr)
				}
				return
			}
			if rerr != nil || string(body) != c.want {
				t.Fatalf("err %v, body %d bytes; want %d bytes exactly", rerr, len(body), len(c.want))
			}
		})
	}
	t.Run("the provider's error event at the end", func(t *testing.T) {
		s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) {
			o.Transport = chunkedTransport{[]string{
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n",
			}}
		})
		status, _, body := s.do("/v1/messages", `{"model":"mock-claude","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`,
			map[string]string{"anthropic-version": "2023-06-01"})
		if status != 200 || !strings.HasSuffix(string(body), "\"overloaded_error\",\"message\":\"x\"}}\n\n") || strings.Count(string(body), "event: error") != 1 {
			t.Fatalf("status %d: %q; want the provider's error event relayed once, with its blank line", status, body)
		}
	})
}
