package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// endlessTransport is a provider that ignores max_tokens: every call
// streams text events in its path's dialect, one after another, each
// claiming that the answer so far is one token, until the gateway stops
// reading (or a bound far past any limit, which fails the test).
type endlessTransport struct {
	text    string // each event's text
	stopped atomic.Int32
	sent    atomic.Int64 // events sent in all
}

// endlessBound is how many events a call sends at most: far past any
// output limit a test sets.
const endlessBound = 5_000

func (e *endlessTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	path := r.URL.Path
	pr, pw := io.Pipe()
	text, _ := json.Marshal(e.text)
	go func() {
		defer pw.Close()
		var head, ev func(i int) string
		switch {
		case strings.HasSuffix(path, "/messages"):
			head = func(int) string {
				return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
					"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
			}
			ev = func(i int) string {
				s := fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%s}}\n\n", text)
				if i%10 == 9 {
					s += "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null},\"usage\":{\"output_tokens\":1}}\n\n"
				}
				return s
			}
		case strings.HasSuffix(path, "/responses"):
			head = func(int) string {
				return "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"model\":\"m\",\"output\":[]}}\n\n"
			}
			ev = func(i int) string {
				return fmt.Sprintf("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":%s}\n\n", i+1, text)
			}
		case strings.HasSuffix(path, "/completions") && !strings.HasSuffix(path, "/chat/completions"):
			head = func(int) string { return "" }
			ev = func(int) string {
				return fmt.Sprintf("data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"text\":%s,\"index\":0,\"logprobs\":null,\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\n", text)
			}
		default:
			head = func(int) string {
				return "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
			}
			ev = func(int) string {
				return fmt.Sprintf("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\n", text)
			}
		}
		if _, err := pw.Write([]byte(head(0))); err != nil {
			e.stopped.Add(1)
			return
		}
		for i := range endlessBound {
			if _, err := pw.Write([]byte(ev(i))); err != nil {
				e.stopped.Add(1)
				return
			}
			e.sent.Add(1)
		}
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: r}, nil
}

// sseNamed splits an SSE body into its events' data, with their names.
func sseNamed(body string) (names, data []string) {
	for _, block := range strings.Split(body, "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		var name, d string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				d = strings.TrimPrefix(line, "data: ")
			}
		}
		names, data = append(names, name), append(data, d)
	}
	return names, data
}

// logFields is the request's log line, as JSON fields.
func logFields(t *testing.T, s *stack) map[string]any {
	t.Helper()
	var out map[string]any
	waitFor(t, "the request's log line", func() bool {
		for _, l := range strings.Split(s.logText(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
				out = m
				return true
			}
		}
		return false
	})
	return out
}

// A provider that ignores max_tokens is cut where the request's output
// cap ends, plus the margin (1/32 of it, at least 16 tokens), whatever it
// says of its own count: the client gets the answer up to there, ended
// as a length stop in its own dialect with its terminator; the provider's
// call is stopped; and the request is logged, charged and billed what
// was relayed. Without max_tokens the model's default_max_tokens is the
// cap. It was relayed to the deadline (9.5 MB over 60 s), logged as one
// token.
func TestOutputCapCutsAProviderThatIgnoresMaxTokens(t *testing.T) {
	for _, c := range []struct {
		name, path, body string
		text             string
		limit            int // the relayed count logged: the limit, or less
		// events is how many text events the client gets: limit for one
		// token an event, fewer for large ones.
		events int
		check  func(t *testing.T, names, data []string)
	}{
		{name: "openai chat, max_tokens 200", path: "/v1/chat/completions",
			body: `{"model":"mock-gpt","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: "word ", limit: 216, events: 216, check: openAILengthStop(false)},
		{name: "openai chat, no max_tokens: the model's default", path: "/v1/chat/completions",
			body: `{"model":"mock-gpt","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			text: "word ", limit: 300 + 16, events: 316, check: openAILengthStop(true)},
		{name: "openai chat, 4 KiB events", path: "/v1/chat/completions",
			body: `{"model":"mock-gpt","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: strings.Repeat("a", 4096), limit: 128, events: 1, check: openAILengthStop(false)},
		{name: "anthropic messages", path: "/v1/messages",
			body: `{"model":"mock-claude","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: "word ", limit: 216, events: 216, check: anthropicLengthStop},
		{name: "openai client, anthropic provider", path: "/v1/chat/completions",
			body: `{"model":"mock-claude","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: "word ", limit: 216, events: 216, check: openAILengthStop(false)},
		{name: "anthropic client, openai provider", path: "/v1/messages",
			body: `{"model":"mock-gpt","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: "word ", limit: 216, events: 216, check: anthropicLengthStop},
		{name: "completions", path: "/v1/completions",
			body: `{"model":"mock-gpt","stream":true,"max_tokens":200,"prompt":"hi"}`,
			text: "word ", limit: 216, events: 216, check: completionLengthStop},
		{name: "responses", path: "/v1/responses",
			body: `{"model":"mock-gpt","stream":true,"max_output_tokens":200,"input":"hi"}`,
			text: "word ", limit: 216, events: 216, check: responsesLengthStop},
		{name: "responses, bridged to a chat stream and translated", path: "/v1/responses",
			body: `{"model":"mock-claude","stream":true,"max_output_tokens":200,"input":"hi"}`,
			text: "word ", limit: 216, events: 216, check: bridgedLengthStop},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := &endlessTransport{text: c.text}
			s := newStack(t, mock.Config{}, func(cfg *config.Config) {
				cfg.Log.Format = "json"
				for i := range cfg.Models {
					cfg.Models[i].DefaultMaxTokens = 300
				}
			}, func(o *gateway.Options) { o.Transport = up })
			status, _, body := s.do(c.path, c.body, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			if len(body) > 1<<20 {
				t.Fatalf("relayed %d bytes: the stream was not cut", len(body))
			}
			names, data := sseNamed(string(body))
			texts := 0
			for i, d := range data {
				delta := names[i] == "" || strings.HasSuffix(names[i], "delta") // not a done event's whole text
				if delta && strings.Contains(d, strings.TrimSpace(c.text)) {
					texts++
				}
			}
			if texts != c.events {
				t.Errorf("the client got %d text events, want %d (the cap and the margin)", texts, c.events)
			}
			c.check(t, names, data)
			waitFor(t, "the provider's call to be stopped", func() bool { return up.stopped.Load() >= 1 })
			if up.sent.Load() >= endlessBound {
				t.Fatalf("the provider sent all %d events", endlessBound)
			}
			l := logFields(t, s)
			if l["outcome"] != "ok" || l["reason"] != "output_cap" {
				t.Errorf("logged outcome %v, reason %v; want ok, output_cap", l["outcome"], l["reason"])
			}
			if out, _ := l["output_tokens"].(float64); int(out) != c.limit {
				t.Errorf("logged %v output tokens, want %d: what was relayed, not the provider's 1", l["output_tokens"], c.limit)
			}
		})
	}
}

// openAILengthStop checks a chat stream's end: a chunk with
// finish_reason "length", the usage chunk when asked for, [DONE].
func openAILengthStop(usage bool) func(t *testing.T, names, data []string) {
	return func(t *testing.T, names, data []string) {
		t.Helper()
		n := len(data)
		if n < 3 || data[n-1] != "[DONE]" {
			t.Fatalf("the stream does not end with [DONE]: %q", data[max(0, n-3):])
		}
		fin := data[n-2]
		if usage {
			if !strings.Contains(data[n-2], `"usage":{"prompt_tokens":`) || !strings.Contains(data[n-2], `"completion_tokens":316`) {
				t.Errorf("the usage chunk is not the relayed count: %s", data[n-2])
			}
			fin = data[n-3]
		}
		if !strings.Contains(fin, `"finish_reason":"length"`) {
			t.Errorf("the stream's last chunk is no length stop: %s", fin)
		}
		for _, d := range data {
			if d != "[DONE]" && !json.Valid([]byte(d)) {
				t.Errorf("an event is not JSON: %s", d)
			}
		}
	}
}

func anthropicLengthStop(t *testing.T, names, data []string) {
	t.Helper()
	n := len(names)
	if n < 3 || names[n-1] != "message_stop" || names[n-2] != "message_delta" || names[n-3] != "content_block_stop" {
		t.Fatalf("the stream does not end with content_block_stop, message_delta, message_stop: %q", names[max(0, n-3):])
	}
	if !strings.Contains(data[n-2], `"stop_reason":"max_tokens"`) || !strings.Contains(data[n-2], `"output_tokens":216`) {
		t.Errorf("message_delta is no length stop with the relayed count: %s", data[n-2])
	}
}

func completionLengthStop(t *testing.T, names, data []string) {
	t.Helper()
	n := len(data)
	if n < 2 || data[n-1] != "[DONE]" || !strings.Contains(data[n-2], `"object":"text_completion"`) || !strings.Contains(data[n-2], `"finish_reason":"length"`) {
		t.Fatalf("the stream does not end with a text_completion length stop and [DONE]: %q", data[max(0, n-2):])
	}
}

// bridgedLengthStop: the bridge writes the chat length stop as the
// Responses API's own.
func bridgedLengthStop(t *testing.T, names, data []string) {
	t.Helper()
	n := len(names)
	if n < 1 || names[n-1] != "response.incomplete" || !strings.Contains(data[n-1], `"reason":"max_output_tokens"`) {
		t.Fatalf("the stream does not end with response.incomplete for max_output_tokens: %q %q", names[max(0, n-2):], data[max(0, n-1):])
	}
}

func responsesLengthStop(t *testing.T, names, data []string) {
	t.Helper()
	n := len(names)
	if n < 1 || names[n-1] != "response.incomplete" {
		t.Fatalf("the stream does not end with response.incomplete: %q", names[max(0, n-2):])
	}
	var ev struct {
		Type     string `json:"type"`
		Seq      int    `json:"sequence_number"`
		Response struct {
			ID         string `json:"id"`
			CreatedAt  int64  `json:"created_at"`
			Status     string `json:"status"`
			Incomplete struct {
				Reason string `json:"reason"`
			} `json:"incomplete_details"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(data[n-1]), &ev); err != nil || ev.Type != "response.incomplete" || ev.Response.Status != "incomplete" ||
		ev.Response.Incomplete.Reason != "max_output_tokens" || ev.Response.ID != "resp_1" || ev.Seq != 217 || ev.Response.CreatedAt != 1 {
		t.Errorf("response.incomplete is not the stream's own length stop (%v): %s", err, data[n-1])
	}
}

// A continuation is cut at the same limit as the answer it continues,
// counting what the broken call relayed: the client gets max_tokens
// (and the margin) in all, ended as a length stop, and the continuation
// is billed what it relayed. A continuation that ignored max_tokens was
// relayed whole: 350 words, billed 372, for max_tokens: 200.
func TestOutputCapCutsAContinuation(t *testing.T) {
	p := primary(t, false, breakCut) // 40 words, then the stream is cut
	var stopped atomic.Int32
	f := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request, _ map[string]any) {
		s := startSSE(w, false)
		for i := 40; i < 40+endlessBound; i++ {
			if r.Context().Err() != nil {
				stopped.Add(1)
				return
			}
			s.raw(fmt.Sprintf("data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\n", word(i)))
		}
	})
	y := fmt.Sprintf(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
log: {format: json}
providers:
  - {name: primary, kind: openai, base_url: %s, continuation: none}
  - {name: fallback, kind: openai, base_url: %s, continuation: prefill}
models:
  - name: m
    targets:
      - {provider: primary, model: up}
      - {provider: fallback, model: up}
`, p.srv.URL, f.srv.URL)
	cfg, err := config.Parse([]byte(y), "cap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	sw := &syncWriter{w: logs}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(sw, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(g.Close)

	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(raw) > 1<<20 {
		t.Fatalf("status %d, %d bytes", resp.StatusCode, len(raw))
	}
	_, data := sseNamed(string(raw))
	var text strings.Builder
	for _, d := range data {
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(d), &c) == nil && len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if want := wordsText(0, 216); text.String() != want {
		t.Errorf("the client got %d words, want the first 216 exactly once:\n%s", len(strings.Fields(text.String())), text.String())
	}
	openAILengthStop(false)(t, nil, data)
	if got := resp.Trailer.Get("X-Sluice-Continuation"); !strings.Contains(got, "to=fallback") {
		t.Errorf("trailer X-Sluice-Continuation %q, want the continuation named", got)
	}
	waitFor(t, "the continuation's call to be stopped", func() bool { return stopped.Load() >= 1 })
	var line map[string]any
	waitFor(t, "the request's log line", func() bool {
		sw.mu.Lock()
		defer sw.mu.Unlock()
		for _, l := range strings.Split(logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
				line = m
				return true
			}
		}
		return false
	})
	if line["outcome"] != "ok" || line["reason"] != "output_cap" || line["output_tokens"] != float64(216) {
		t.Errorf("logged %v/%v with %v output tokens; want ok/output_cap with 216, the 40 relayed and the continuation's 176",
			line["outcome"], line["reason"], line["output_tokens"])
	}
}

// A provider that keeps to max_tokens is never cut: its answer, as long
// as the cap, reaches the client as it sent it, with its own finish.
func TestOutputCapLeavesAnHonestProviderAlone(t *testing.T) {
	for _, c := range []struct{ name, path, body string }{
		{"openai, at max_tokens", "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`},
		{"anthropic, at max_tokens", "/v1/messages", `{"model":"mock-claude","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`},
		{"openai client, anthropic provider", "/v1/chat/completions", `{"model":"mock-claude","stream":true,"max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`},
		{"openai, at the default", "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 200, Max: 200}}, func(cfg *config.Config) {
				cfg.Log.Format = "json"
				for i := range cfg.Models {
					cfg.Models[i].DefaultMaxTokens = 200
				}
			})
			status, _, body := s.do(c.path, c.body, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			l := logFields(t, s)
			if l["outcome"] != "ok" || l["reason"] != nil {
				t.Errorf("logged %v/%v, want ok and no reason: an answer within its cap was cut", l["outcome"], l["reason"])
			}
			if out, _ := l["output_tokens"].(float64); out != 200 {
				t.Errorf("logged %v output tokens, want the provider's 200", l["output_tokens"])
			}
		})
	}
}
