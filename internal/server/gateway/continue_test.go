package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// Mid-stream continuation, with upstreams written here: a primary that
// breaks after 40 of 60 words, in each way a stream breaks, and a
// fallback that continues the answer, with a prefill or with a
// continuation prompt. The client gets the 60 words exactly once, one
// terminator, the attempts' summed usage, the fallback's finish reason
// and a trailer naming the continuation; or, when nothing can continue,
// the original cause, and no finish reason.

const contWords = 60

func word(i int) string { return fmt.Sprintf("w%d ", i+1) }

func wordsText(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(word(i))
	}
	return b.String()
}

// noContinuation turns continuation off for every provider.
func noContinuation(cfg *config.Config) {
	for i := range cfg.Providers {
		cfg.Providers[i].Continuation = config.ContinueNone
	}
}

// sseWriter writes one upstream stream, flushing every event.
type sseWriter struct {
	w         http.ResponseWriter
	anthropic bool
}

func startSSE(w http.ResponseWriter, anthropic bool) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	s := &sseWriter{w: w, anthropic: anthropic}
	if anthropic {
		s.raw("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
		s.raw("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	} else {
		s.raw("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n")
	}
	return s
}

func (s *sseWriter) raw(ev string) {
	io.WriteString(s.w, ev)
	s.w.(http.Flusher).Flush()
}

func (s *sseWriter) text(t string) {
	q, _ := json.Marshal(t)
	if s.anthropic {
		s.raw("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":" + string(q) + "}}\n\n")
		return
	}
	s.raw("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"content\":" + string(q) + "},\"finish_reason\":null}]}\n\n")
}

// finish ends the stream with its finish reason and usage; terminator
// adds [DONE] or message_stop.
func (s *sseWriter) finish(tokens int, terminator bool) {
	if s.anthropic {
		s.raw("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		s.raw(fmt.Sprintf("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%d}}\n\n", tokens))
		if terminator {
			s.raw("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		}
		return
	}
	s.raw("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n")
	s.raw(fmt.Sprintf("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", tokens, tokens+5))
	if terminator {
		s.raw("data: [DONE]\n\n")
	}
}

// breakHow is how the primary breaks after its 40th word.
type breakHow int

const (
	breakCut breakHow = iota
	breakStall
	breakMalformed
	breakErrorEvent
	breakNone // it sends the whole answer, without its terminator
)

// upstream is a fake provider that records what it was sent.
type upstream struct {
	srv       *httptest.Server
	mu        sync.Mutex
	bodies    []map[string]any
	cancelled chan struct{} // closed when a call's context ended early
	once      sync.Once
}

func (u *upstream) calls() int { u.mu.Lock(); defer u.mu.Unlock(); return len(u.bodies) }

func (u *upstream) body(i int) map[string]any { u.mu.Lock(); defer u.mu.Unlock(); return u.bodies[i] }

func newUpstream(t *testing.T, h func(u *upstream, w http.ResponseWriter, r *http.Request, body map[string]any)) *upstream {
	u := &upstream{cancelled: make(chan struct{})}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.mu.Unlock()
		h(u, w, r, body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// primary sends 40 of 60 words, then breaks as how says.
func primary(t *testing.T, anthropic bool, how breakHow) *upstream {
	return newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request, _ map[string]any) {
		s := startSSE(w, anthropic)
		n := 40
		if how == breakNone {
			n = contWords
		}
		for i := range n {
			s.text(word(i))
			time.Sleep(200 * time.Microsecond)
		}
		switch how {
		case breakStall:
			select {
			case <-r.Context().Done():
				u.once.Do(func() { close(u.cancelled) })
			case <-time.After(10 * time.Second):
			}
		case breakMalformed:
			s.raw("data: {\"choices\":[{\"delta\":{\"content\":\"oops\n\n")
		case breakErrorEvent:
			if anthropic {
				s.raw("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n")
			} else {
				s.raw("data: {\"error\":{\"message\":\"busy\",\"type\":\"server_error\"}}\n\n")
			}
		case breakNone:
			s.finish(contWords, false)
		}
		// breakCut: the handler returns, and the stream ends without its
		// finish reason.
	})
}

// fallback continues the answer: with a prefill it takes the assistant
// message as its own and sends words 41-60; without, it repeats the
// last three words first. refuse: it refuses a prefill with a 400.
func fallback(t *testing.T, anthropic, prefill, refuse bool) *upstream {
	return newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request, body map[string]any) {
		msgs, _ := body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		if refuse {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"this model does not support assistant message prefill","type":"invalid_request_error"}}`)
			return
		}
		from := 40
		if last["role"] == "user" {
			from = 37 // a continuation prompt: it repeats the last words
		}
		s := startSSE(w, anthropic)
		for i := from; i < contWords; i++ {
			s.text(word(i))
		}
		s.finish(contWords-from, true)
	})
}

type contSetup struct {
	clientAnthropic    bool
	primaryAnthropic   bool
	fallbackAnthropic  bool
	how                breakHow
	fallbackMode       string // "prefill", "prompt", "none"; "" no fallback
	refuse             bool
	primaryContinuable bool
}

func contGateway(t *testing.T, c contSetup) (*httptest.Server, *upstream, *upstream) {
	t.Helper()
	p := primary(t, c.primaryAnthropic, c.how)
	kind := func(a bool) string {
		if a {
			return "anthropic"
		}
		return "openai"
	}
	var f *upstream
	y := fmt.Sprintf(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
server:
  stream_stall_timeout: 300ms
  stream_stall_floor: 50ms
providers:
  - name: primary
    kind: %s
    base_url: %s
    continuation: %s
`, kind(c.primaryAnthropic), p.srv.URL, map[bool]string{true: "prompt", false: "none"}[c.primaryContinuable])
	targets := "      - {provider: primary, model: up}\n"
	if c.fallbackMode != "" {
		f = fallback(t, c.fallbackAnthropic, c.fallbackMode == "prefill", c.refuse)
		y += fmt.Sprintf("  - name: fallback\n    kind: %s\n    base_url: %s\n    continuation: %s\n", kind(c.fallbackAnthropic), f.srv.URL, c.fallbackMode)
		targets += "      - {provider: fallback, model: up}\n"
	}
	y += "models:\n  - name: m\n    targets:\n" + targets
	cfg, err := config.Parse([]byte(y), "continue.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(g.Close)
	return srv, p, f
}

// clientStream is what a client read of a stream.
type clientStream struct {
	text        string
	terminators int
	finish      string
	usage       int
	errors      []string
	trailer     string
	raw         string
}

func streamOf(t *testing.T, srv *httptest.Server, anthropic bool) clientStream {
	t.Helper()
	path := "/v1/chat/completions"
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"count"}]}`
	if anthropic {
		path = "/v1/messages"
		body = `{"model":"m","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"count"}]}`
	}
	req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if anthropic {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	cs := clientStream{raw: string(raw), trailer: resp.Trailer.Get("X-Sluice-Continuation")}
	for _, ev := range strings.Split(string(raw), "\n\n") {
		var data string
		for _, line := range strings.Split(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = d
			}
		}
		if data == "" {
			continue
		}
		if data == "[DONE]" {
			cs.terminators++
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("the client got a malformed event %q in %s", data, raw)
		}
		if e, ok := v["error"].(map[string]any); ok {
			cs.errors = append(cs.errors, fmt.Sprint(e["message"]))
			continue
		}
		if anthropic {
			switch v["type"] {
			case "content_block_delta":
				d := v["delta"].(map[string]any)
				cs.text += fmt.Sprint(d["text"])
			case "message_delta":
				d := v["delta"].(map[string]any)
				if r, ok := d["stop_reason"].(string); ok {
					cs.finish = r
				}
				if u, ok := v["usage"].(map[string]any); ok {
					cs.usage = int(u["output_tokens"].(float64))
				}
			case "message_stop":
				cs.terminators++
			}
			continue
		}
		if u, ok := v["usage"].(map[string]any); ok && u != nil {
			cs.usage = int(u["completion_tokens"].(float64))
		}
		for _, c := range v["choices"].([]any) {
			ch := c.(map[string]any)
			if d, ok := ch["delta"].(map[string]any); ok {
				if s, ok := d["content"].(string); ok {
					cs.text += s
				}
			}
			if r, ok := ch["finish_reason"].(string); ok {
				cs.finish = r
			}
		}
	}
	return cs
}

func TestStreamContinuedOnAnotherTarget(t *testing.T) {
	whole := wordsText(0, contWords)
	cases := []struct {
		name       string
		setup      contSetup
		wantFinish string
		wantUsage  int
		wantMode   string
	}{
		{"openai, cut, prefill", contSetup{how: breakCut, fallbackMode: "prefill"}, "length", 60, "mode=prefill"},
		{"openai, cut, prompt", contSetup{how: breakCut, fallbackMode: "prompt"}, "length", 63, "mode=prompt"},
		{"openai, stall, prefill", contSetup{how: breakStall, fallbackMode: "prefill"}, "length", 60, "cause=stall"},
		{"openai, malformed, prefill", contSetup{how: breakMalformed, fallbackMode: "prefill"}, "length", 60, "cause=malformed"},
		{"openai, error event, prompt", contSetup{how: breakErrorEvent, fallbackMode: "prompt"}, "length", 63, "cause=error_event"},
		{"anthropic, cut, prefill", contSetup{clientAnthropic: true, primaryAnthropic: true, fallbackAnthropic: true, how: breakCut, fallbackMode: "prefill"}, "max_tokens", 60, "mode=prefill"},
		{"anthropic, cut, prompt", contSetup{clientAnthropic: true, primaryAnthropic: true, fallbackAnthropic: true, how: breakCut, fallbackMode: "prompt"}, "max_tokens", 63, "mode=prompt"},
		{"anthropic, stall, prefill", contSetup{clientAnthropic: true, primaryAnthropic: true, fallbackAnthropic: true, how: breakStall, fallbackMode: "prefill"}, "max_tokens", 60, "cause=stall"},
		{"anthropic, error event, prefill", contSetup{clientAnthropic: true, primaryAnthropic: true, fallbackAnthropic: true, how: breakErrorEvent, fallbackMode: "prefill"}, "max_tokens", 60, "cause=error_event"},
		{"translated: openai client, openai primary, anthropic fallback", contSetup{how: breakCut, fallbackAnthropic: true, fallbackMode: "prefill"}, "length", 60, "to=fallback"},
		{"translated: openai client on anthropic upstreams, prompt", contSetup{primaryAnthropic: true, fallbackAnthropic: true, how: breakCut, fallbackMode: "prompt"}, "length", 63, "mode=prompt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, p, f := contGateway(t, c.setup)
			cs := streamOf(t, srv, c.setup.clientAnthropic)
			if cs.text != whole {
				t.Fatalf("text %q\nwant %q\nraw %s", cs.text, whole, cs.raw)
			}
			if cs.terminators != 1 || len(cs.errors) > 0 {
				t.Fatalf("%d terminators, errors %v; want one terminator and no error\nraw %s", cs.terminators, cs.errors, cs.raw)
			}
			if cs.finish != c.wantFinish || cs.usage != c.wantUsage {
				t.Errorf("finish %q usage %d, want %q %d", cs.finish, cs.usage, c.wantFinish, c.wantUsage)
			}
			if !strings.Contains(cs.trailer, c.wantMode) || !strings.Contains(cs.trailer, "to=fallback") {
				t.Errorf("X-Sluice-Continuation %q, want it to name %q", cs.trailer, c.wantMode)
			}
			if p.calls() != 1 || f.calls() != 1 {
				t.Errorf("primary had %d calls, fallback %d; want 1 and 1", p.calls(), f.calls())
			}
			// What the fallback was asked.
			b := f.body(0)
			msgs := b["messages"].([]any)
			last := msgs[len(msgs)-1].(map[string]any)
			switch {
			case c.setup.fallbackMode == "prompt" && last["role"] != "user":
				t.Errorf("a prompted continuation ends with %v, want a user message", last)
			case c.setup.fallbackMode == "prefill" && last["role"] != "assistant":
				t.Errorf("a prefill ends with %v, want the assistant's message", last)
			case c.setup.fallbackMode == "prefill" && !c.setup.fallbackAnthropic && b["continue_final_message"] != true:
				t.Errorf("an OpenAI-style prefill without continue_final_message: %v", b)
			}
			if c.setup.how == breakStall {
				select {
				case <-p.cancelled:
				case <-time.After(2 * time.Second):
					t.Error("the stalled call was not cancelled upstream")
				}
			}
		})
	}
}

// A stream that carried its finish reason and closed without its
// terminator is complete: the client gets the terminator, not an error.
func TestCompleteStreamWithoutTerminator(t *testing.T) {
	for _, anthropic := range []bool{false, true} {
		t.Run(map[bool]string{false: "openai", true: "anthropic"}[anthropic], func(t *testing.T) {
			srv, p, f := contGateway(t, contSetup{clientAnthropic: anthropic, primaryAnthropic: anthropic, fallbackAnthropic: anthropic, how: breakNone, fallbackMode: "prefill"})
			cs := streamOf(t, srv, anthropic)
			if cs.text != wordsText(0, contWords) || cs.terminators != 1 || len(cs.errors) > 0 || cs.finish == "" {
				t.Fatalf("text %q, %d terminators, errors %v, finish %q\nraw %s", cs.text, cs.terminators, cs.errors, cs.finish, cs.raw)
			}
			if p.calls() != 1 || f.calls() != 0 {
				t.Errorf("primary %d calls, fallback %d; want 1 and 0", p.calls(), f.calls())
			}
		})
	}
}

// When nothing can continue, the stream ends with the original cause,
// never the fallback's prefill refusal, and no finish reason.
func TestStreamNotContinued(t *testing.T) {
	cases := []struct {
		name  string
		setup contSetup
		calls int
	}{
		{"the only fallback refuses prefill", contSetup{how: breakCut, fallbackMode: "prefill", refuse: true}, 1},
		{"the fallback cannot continue", contSetup{how: breakCut, fallbackMode: "none"}, 0},
		{"no fallback", contSetup{how: breakCut}, 0},
		{"anthropic, the only fallback refuses prefill", contSetup{clientAnthropic: true, primaryAnthropic: true, fallbackAnthropic: true, how: breakMalformed, fallbackMode: "prefill", refuse: true}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, p, f := contGateway(t, c.setup)
			cs := streamOf(t, srv, c.setup.clientAnthropic)
			if cs.text != wordsText(0, 40) {
				t.Errorf("text %q, want the 40 words sent", cs.text)
			}
			if len(cs.errors) != 1 || strings.Contains(cs.errors[0], "prefill") ||
				!(strings.Contains(cs.errors[0], "primary")) {
				t.Errorf("errors %v, want one naming the primary's own failure", cs.errors)
			}
			if cs.finish != "" || cs.terminators != 0 || strings.Contains(cs.raw, "[DONE]") {
				t.Errorf("finish %q, %d terminators: a truncated answer must not look complete\nraw %s", cs.finish, cs.terminators, cs.raw)
			}
			if p.calls() != 1 || f != nil && f.calls() != c.calls {
				t.Errorf("primary %d calls, fallback %d; want 1 and %d", p.calls(), f.calls(), c.calls)
			}
		})
	}
}

// A whole answer whose body breaks off after its headers is restarted on
// the next target: nothing of it reached the client.
func TestWholeAnswerBrokenMidBodyRetried(t *testing.T) {
	const answer = `{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	for _, how := range []string{"reset", "truncated"} {
		t.Run(how, func(t *testing.T) {
			p := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request, _ map[string]any) {
				w.Header().Set("Content-Type", "application/json")
				if how == "truncated" {
					io.WriteString(w, answer[:40]) // a clean end, mid-JSON
					return
				}
				w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
				w.WriteHeader(200)
				io.WriteString(w, answer[:40])
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
			})
			f := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request, _ map[string]any) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, answer)
			})
			y := fmt.Sprintf("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nproviders:\n  - {name: primary, kind: openai, base_url: %s}\n  - {name: fallback, kind: openai, base_url: %s}\nmodels:\n  - name: m\n    targets:\n      - {provider: primary, model: up}\n      - {provider: fallback, model: up}\n", p.srv.URL, f.srv.URL)
			cfg, err := config.Parse([]byte(y), "whole.yaml")
			if err != nil {
				t.Fatal(err)
			}
			g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, cfg.Log)})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(g.Handler())
			t.Cleanup(srv.Close)
			t.Cleanup(g.Close)
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Equal(body, []byte(answer)) {
				t.Fatalf("status %d, body %s; want the fallback's whole answer", resp.StatusCode, body)
			}
			// The same target may be tried once more first (a single
			// transient failure keeps the client's model).
			if p.calls() < 1 || f.calls() != 1 {
				t.Errorf("primary %d calls, fallback %d; want the fallback's one to answer", p.calls(), f.calls())
			}
		})
	}
}

// A client that leaves during a continuation cancels the continuation's
// upstream call, as it would any other (invariant 2).
func TestClientGoneCancelsContinuation(t *testing.T) {
	p := primary(t, false, breakCut)
	f := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request, _ map[string]any) {
		s := startSSE(w, false)
		s.text(word(40))
		select {
		case <-r.Context().Done():
			u.once.Do(func() { close(u.cancelled) })
		case <-time.After(10 * time.Second):
		}
	})
	y := fmt.Sprintf("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nproviders:\n  - {name: primary, kind: openai, base_url: %s, continuation: none}\n  - {name: fallback, kind: openai, base_url: %s, continuation: prefill}\nmodels:\n  - name: m\n    targets:\n      - {provider: primary, model: up}\n      - {provider: fallback, model: up}\n", p.srv.URL, f.srv.URL)
	cfg, err := config.Parse([]byte(y), "gone.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(g.Close)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"count"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// Read until the continuation's first word has come, then leave.
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte(word(40))) {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("stream ended before the continuation: %v\n%s", err, got)
		}
	}
	resp.Body.Close()
	select {
	case <-f.cancelled:
	case <-time.After(2 * time.Second):
		t.Fatal("the continuation's upstream call was not cancelled when the client left")
	}
}
