package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// endingTransport answers every call with an SSE stream read in the
// given pieces, one a read, the last of them returned together with end:
// a provider whose last events arrive in the same read as the stream's
// end, as a real transport often delivers them.
type endingTransport struct {
	pieces []string
	end    error
}

func (t endingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(&endingReader{pieces: t.pieces, end: t.end}), Request: r}, nil
}

type endingReader struct {
	pieces []string
	end    error
}

func (r *endingReader) Read(p []byte) (int, error) {
	if len(r.pieces) == 0 {
		return 0, r.end
	}
	n := copy(p, r.pieces[0])
	if r.pieces[0] = r.pieces[0][n:]; r.pieces[0] == "" {
		r.pieces = r.pieces[1:]
	}
	if len(r.pieces) == 0 {
		return n, r.end
	}
	return n, nil
}

// Every event the provider sent whole before its stream failed reaches
// the client, before the error event Sluice adds: the events of the read
// that also brought the failure (a cut, or the end without a
// terminator) are not dropped, whether the stream is translated or not.
func TestEventsBeforeAFailureReachTheClient(t *testing.T) {
	const (
		oaHead   = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hello\"}}]}\n\n"
		oaTail   = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
		anHead   = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
		anTail   = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" world\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
		finished = `"finish_reason":"stop"`
	)
	cases := []struct {
		name   string
		cross  bool
		pieces []string
		end    error
		reason string
	}{
		{"cut", false, []string{oaHead, oaTail}, io.ErrUnexpectedEOF, "stream_cut"},
		{"closed without its terminator", false, []string{oaHead, oaTail}, io.EOF, "stream_unterminated"},
		{"translated, cut", true, []string{anHead, anTail}, io.ErrUnexpectedEOF, "stream_cut"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mutate := func(cfg *config.Config) { cfg.Log.Format = "json" }
			if c.cross {
				mutate = func(cfg *config.Config) { cfg.Log.Format = "json"; openAIOnAnthropic(cfg) }
			}
			s := newStack(t, mock.Config{}, mutate, func(o *gateway.Options) { o.Transport = endingTransport{c.pieces, c.end} })
			status, _, body := s.do("/v1/chat/completions", streamReq, nil)
			text := string(body)
			errAt := strings.Index(text, `{"error":`)
			if status != 200 || errAt < 0 || !strings.Contains(text[:errAt], `"content":" world"`) || !strings.Contains(text[:errAt], finished) {
				t.Fatalf("status %d, body %q; want the last events (\" world\", the finish reason) before the error event", status, body)
			}
			waitFor(t, "the log line", func() bool { return len(s.requestLog()) == 1 })
			if l := s.requestLog()[0]; l.Outcome != "upstream_error" || l.Reason != c.reason {
				t.Errorf("logged %s/%s, want upstream_error/%s", l.Outcome, l.Reason, c.reason)
			}
		})
	}
}

// A translated stream takes the same relay as any other: an event
// larger than the relay's small buffer is held and translated whole; one
// too large to hold, which a translator cannot take in parts, fails the
// stream; the provider's own error event goes out translated, once, with
// nothing added; an event the translator refuses ends the stream after
// the events before it; and a last event without its blank line is
// still read.
func TestTranslatedStreamEndings(t *testing.T) {
	const (
		start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		stop  = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}"
	)
	delta := func(text string) string {
		return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + text + "\"}}\n\n"
	}
	big, huge := delta(strings.Repeat("x", 20_000)), delta(strings.Repeat("y", 100_000))
	cases := []struct {
		name    string
		pieces  []string
		want    []string // in the body, in order
		wantNot string
		outcome string
		reason  string
	}{
		{name: "a 20 KB event", pieces: []string{start + delta("Hi"), big[:7000], big[7000:], stop + "\n\n"},
			want: []string{`"content":"Hi"`, strings.Repeat("x", 20_000), `"finish_reason":"stop"`, "data: [DONE]\n\n"}, wantNot: `"error"`, outcome: "ok"},
		{name: "the terminator without its blank line", pieces: []string{start + delta("Hi"), stop},
			want: []string{`"content":"Hi"`, "data: [DONE]\n\n"}, wantNot: `"error"`, outcome: "ok"},
		{name: "an event too large to hold", pieces: []string{start + delta("Hi"), huge[:50_000], huge[50_000:], stop + "\n\n"},
			want: []string{`"content":"Hi"`, "malformed event"}, wantNot: "yyyy", outcome: "upstream_error", reason: "stream_malformed"},
		{name: "the provider's error event", pieces: []string{start + delta("Hi"), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n"},
			want: []string{`"content":"Hi"`, "busy"}, outcome: "upstream_error", reason: "stream_error_event"},
		{name: "an event it cannot translate", pieces: []string{start + delta("Hi"), delta("there") + "event: content_block_delta\ndata: [1,2]\n\n" + delta("lost")},
			want: []string{`"content":"Hi"`, `"content":"there"`, "cannot be translated"}, wantNot: "lost", outcome: "upstream_error", reason: "stream_untranslatable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, mock.Config{}, func(cfg *config.Config) { cfg.Log.Format = "json"; openAIOnAnthropic(cfg) },
				func(o *gateway.Options) { o.Transport = chunkedTransport{c.pieces} })
			status, _, body := s.do("/v1/chat/completions", streamReq, nil)
			text, at := string(body), 0
			for _, w := range c.want {
				i := strings.Index(text[at:], w)
				if i < 0 {
					t.Fatalf("status %d, body %.600q; want %.80q (after what came before it)", status, text, w)
				}
				at += i + len(w)
			}
			if status != 200 || (c.wantNot != "" && strings.Contains(text, c.wantNot)) || strings.Count(text, `{"error":`) > 1 {
				t.Fatalf("status %d, body %.600q; want no %q and at most one error event", status, text, c.wantNot)
			}
			waitFor(t, "the log line", func() bool { return len(s.requestLog()) == 1 })
			if l := s.requestLog()[0]; l.Outcome != c.outcome || l.Reason != c.reason {
				t.Errorf("logged %s/%s, want %s/%s", l.Outcome, l.Reason, c.outcome, c.reason)
			}
		})
	}
}
