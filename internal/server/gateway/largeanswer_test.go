package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// pieceTransport answers every call with the body it holds now, read in
// pieces of at most piece bytes; with cut > 0 the body breaks off after
// cut bytes.
type pieceTransport struct {
	mu    sync.Mutex
	body  []byte
	piece int
	cut   int
}

func (p *pieceTransport) set(body []byte, piece, cut int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.body, p.piece, p.cut = body, piece, cut
}

func (p *pieceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	body := &pieceReader{b: p.body, piece: p.piece, cut: p.cut}
	n := len(p.body)
	p.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(body), Request: r, ContentLength: int64(n)}, nil
}

type pieceReader struct {
	b          []byte
	at         int
	piece, cut int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	end := len(r.b)
	if r.cut > 0 {
		end = r.cut
	}
	if r.at >= end {
		if r.cut > 0 {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.piece)], r.b[r.at:end])
	r.at += n
	return n, nil
}

// usageLine is what the request log says of a call's usage.
type usageLine struct {
	Msg          string `json:"msg"`
	Outcome      string `json:"outcome"`
	Reason       string `json:"reason"`
	Status       int    `json:"status"`
	OutputTokens int    `json:"output_tokens"`
	InputTokens  int64  `json:"input_tokens"`
}

func (s *stack) usageLines() []usageLine {
	var out []usageLine
	for _, l := range strings.Split(s.logText(), "\n") {
		var u usageLine
		if json.Unmarshal([]byte(l), &u) == nil && u.Msg == "request" {
			out = append(out, u)
		}
	}
	return out
}

// largeText is a model's long answer, past what the gateway holds whole.
var largeText = strings.Repeat("All work and no play makes a dull gateway. ", 2000)

func largeOpenAI(usageFirst bool) string {
	usage := `"usage":{"prompt_tokens":56,"completion_tokens":1234,"total_tokens":1290,"prompt_tokens_details":{"cached_tokens":6}}`
	choices := `"choices":[{"index":0,"message":{"role":"assistant","content":` + quote(largeText) + `},"finish_reason":"stop"}]`
	if usageFirst {
		return `{"id":"chatcmpl-1","object":"chat.completion","model":"mock-gpt",` + usage + `,` + choices + `}`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion","model":"mock-gpt",` + choices + `,` + usage + `}`
}

// largeAnthropic carries a tool input as large as a text block, holding
// usage-shaped decoys; the answer's own usage comes first or last.
func largeAnthropic(usageFirst bool) string {
	rows := strings.TrimSuffix(strings.Repeat(`{"id":12345,"name":"a row of the table","output_tokens":5},`, 1200), ",")
	usage := `"usage":{"input_tokens":40,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":321}`
	content := `"content":[{"type":"text","text":` + quote(largeText[:2000]) + `},{"type":"tool_use","id":"toolu_1","name":"store",` +
		`"input":{"rows":[` + rows + `],"usage":{"output_tokens":99999,"input_tokens":88888},"output_tokens":77777,"stop_reason":"decoy"}}]`
	if usageFirst {
		return `{"id":"msg_1","type":"message","role":"assistant","model":"claude",` + usage + `,` + content + `,"stop_reason":"tool_use"}`
	}
	return `{"id":"msg_1","type":"message","role":"assistant","model":"claude",` + content + `,"stop_reason":"tool_use",` + usage + `}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// largeCall posts to the path a large answer's dialect is asked on.
type largeCall struct {
	name        string
	path, body  string
	answer      string
	out         int
	in          int64
	onlyCompact bool
}

func largeCalls() []largeCall {
	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
	msgs := `{"model":"mock-claude","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
	return []largeCall{
		{name: "openai usage last", path: "/v1/chat/completions", body: chat, answer: largeOpenAI(false), out: 1234, in: 56},
		{name: "openai usage first", path: "/v1/chat/completions", body: chat, answer: largeOpenAI(true), out: 1234, in: 56},
		{name: "anthropic usage last", path: "/v1/messages", body: msgs, answer: largeAnthropic(false), out: 321, in: 45},
		// The decoys in the tool's input come after the usage: a scan of
		// the bytes took the last output_tokens it saw (77777).
		{name: "anthropic usage first", path: "/v1/messages", body: msgs, answer: largeAnthropic(true), out: 321, in: 45},
	}
}

// A large whole answer (past what is held whole) is relayed byte for
// byte, and its usage read from the top-level usage wherever it comes,
// however the provider writes its JSON: compact, spaced, pretty, keys
// shuffled, every string \u-escaped. Counts of the same names inside a
// tool's input are not the answer's.
func TestLargeAnswerUsageInEveryEncoding(t *testing.T) {
	// Held whole up to 4 MiB when it may be cut at its output limit
	// (relay_cap.go); the relay of a larger one is tested on answers
	// past a hold of 64 KiB.
	gateway.LimitHeldAnswer(t, 64<<10)
	tr := &pieceTransport{}
	s := newStack(t, mock.Config{}, func(c *config.Config) { c.Log.Format = "json" },
		func(o *gateway.Options) { o.Transport = tr })
	calls := 0
	for _, c := range largeCalls() {
		for _, form := range []string{"compact", "spaced", "pretty", "shuffled", "escaped"} {
			answer := gateway.EncodeAnswerAs(t, []byte(c.answer), form)
			if len(answer) <= 64<<10 {
				t.Fatalf("%s: a %d-byte answer is held whole", c.name, len(answer))
			}
			tr.set(answer, 4000, 0)
			resp, err := s.post(t.Context(), c.path, c.body, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || rerr != nil || !bytes.Equal(got, answer) {
				t.Fatalf("%s, %s: status %d, %d of %d bytes, %v", c.name, form, resp.StatusCode, len(got), len(answer), rerr)
			}
			calls++
			waitFor(t, "the log line", func() bool { return len(s.usageLines()) == calls })
			l := s.usageLines()[calls-1]
			if l.Outcome != "ok" || l.OutputTokens != c.out || l.InputTokens != c.in {
				t.Errorf("%s, %s: logged %+v; want ok, %d out, %d in", c.name, form, l, c.out, c.in)
			}
		}
	}
}

// An answer the provider sends a byte a read is relayed and read the
// same, and the gateway's key in it is scrubbed though no read holds it
// whole.
func TestLargeAnswerOneByteReads(t *testing.T) {
	// Held whole up to 4 MiB when it may be cut at its output limit
	// (relay_cap.go); the relay of a larger one is tested on answers
	// past a hold of 64 KiB.
	gateway.LimitHeldAnswer(t, 64<<10)
	t.Setenv("SLUICE_TEST_OPENAI_KEY", openAIKey)
	tr := &pieceTransport{}
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Providers[0].APIKeyEnv = "SLUICE_TEST_OPENAI_KEY"
	}, func(o *gateway.Options) { o.Transport = tr })
	answer := gateway.EncodeAnswerAs(t, []byte(`{"choices":[{"message":{"content":`+quote(largeText[:70_000])+`},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":9,"completion_tokens":70},"system_fingerprint":"`+openAIKey+`"}`), "spaced")
	tr.set(answer, 1, 0)
	resp, err := s.post(t.Context(), "/v1/chat/completions", chatBody, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := bytes.ReplaceAll(answer, []byte(openAIKey), bytes.Repeat([]byte("*"), len(openAIKey)))
	if resp.StatusCode != 200 || rerr != nil || !bytes.Equal(got, want) {
		t.Fatalf("status %d, %d of %d bytes, %v; key in it: %v", resp.StatusCode, len(got), len(want), rerr, bytes.Contains(got, []byte(openAIKey)))
	}
	waitFor(t, "the log line", func() bool { return len(s.usageLines()) == 1 })
	if l := s.usageLines()[0]; l.Outcome != "ok" || l.OutputTokens != 70 || l.InputTokens != 9 {
		t.Errorf("logged %+v; want ok, 70 out, 9 in", l)
	}
}

// A large answer that proves malformed, breaks off, or goes on past its
// value never reaches the client whole: the status went out with its
// head, so the connection is aborted short of its last byte, and the log
// says why. One malformed within its head is a 502 before any byte.
func TestLargeAnswerThatFails(t *testing.T) {
	answer := []byte(largeOpenAI(false))
	mid := 80_000 // inside the content, past the head
	bad := bytes.Clone(answer)
	bad[mid] = 0x01 // a control character inside a string
	early := bytes.Clone(answer)
	early[100] = 0x01
	// The limit is 16 MiB; one of 1 MiB keeps the test quick.
	const limit = 1 << 20
	huge := []byte(`{"choices":[{"message":{"content":"` + strings.Repeat("x", limit+64<<10) + `"}}]}`)
	for _, c := range []struct {
		name     string
		answer   []byte
		cut      int
		status   int
		reason   string
		received int // at most
	}{
		{"malformed past the head", bad, 0, 200, "upstream_malformed", mid},
		{"malformed in the head", early, 0, 502, "upstream_malformed", 0},
		{"cut mid-body", answer, mid, 200, "stream_cut", mid},
		{"ends early", answer[:len(answer)-5], 0, 200, "upstream_malformed", len(answer) - 6},
		{"a second value after it", append(bytes.Clone(answer), `{"x":1}`...), 0, 200, "upstream_malformed", len(answer) + 6},
		{"one token too large", huge, 0, 200, "upstream_too_large", len(huge) - 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			gateway.LimitAnswerToken(t, limit)
			gateway.LimitHeldAnswer(t, 64<<10) // as above
			tr := &pieceTransport{}
			tr.set(c.answer, 8000, c.cut)
			s := newStack(t, mock.Config{}, func(c *config.Config) { c.Log.Format = "json" },
				func(o *gateway.Options) { o.Transport = tr })
			resp, err := s.post(t.Context(), "/v1/chat/completions", chatBody, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if c.status == 200 && (rerr == nil || len(got) > c.received || json.Valid(got)) {
				t.Errorf("the client read %d bytes (at most %d wanted), err %v, valid %v: it must see a broken answer", len(got), c.received, rerr, json.Valid(got))
			}
			waitFor(t, "the log line", func() bool { return len(s.usageLines()) == 1 })
			if l := s.usageLines()[0]; l.Outcome != "upstream_error" || l.Reason != c.reason {
				t.Errorf("logged %+v, want upstream_error/%s", l, c.reason)
			}
		})
	}
}

// quietTransport sends part of a large answer and then nothing, until
// the call is cancelled.
type quietTransport struct{ head []byte }

func (q quietTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body := io.MultiReader(bytes.NewReader(q.head), ctxReader{r})
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(body), Request: r, ContentLength: -1}, nil
}

type ctxReader struct{ r *http.Request }

func (c ctxReader) Read([]byte) (int, error) {
	<-c.r.Context().Done()
	return 0, c.r.Context().Err()
}

// A large answer whose provider goes quiet partway is ended at
// stream_idle_timeout, aborted short of whole, with the client given
// what came before.
func TestLargeAnswerGoingQuiet(t *testing.T) {
	// Held whole up to 4 MiB when it may be cut at its output limit
	// (relay_cap.go); the relay of a larger one is tested on answers
	// past a hold of 64 KiB.
	gateway.LimitHeldAnswer(t, 64<<10)
	answer := []byte(largeOpenAI(false))
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Server.StreamIdleTimeout = config.Duration(300 * time.Millisecond)
	}, func(o *gateway.Options) { o.Transport = quietTransport{answer[:80_000]} })
	resp, err := s.post(t.Context(), "/v1/chat/completions", chatBody, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || rerr == nil || len(got) >= 80_000 || !bytes.Equal(got, answer[:len(got)]) {
		t.Fatalf("status %d, read %d bytes (a prefix: %v), err %v; want a broken answer short of 80,000 bytes",
			resp.StatusCode, len(got), bytes.Equal(got, answer[:len(got)]), rerr)
	}
	waitFor(t, "the log line", func() bool { return len(s.usageLines()) == 1 })
	if l := s.usageLines()[0]; l.Outcome != "upstream_error" || l.Reason != "stream_idle" {
		t.Errorf("logged %+v, want upstream_error/stream_idle", l)
	}
}
