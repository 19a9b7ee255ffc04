package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/tokens"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
)

// ignoringTransport is a provider that answers whole (not streamed), in
// its path's dialect, whatever max_tokens says: each answer is
// answer(path, n) for a request of n choices, written in form (one of
// EncodeAnswerAs's: compact, pretty, escaped, ...).
type ignoringTransport struct {
	t      *testing.T
	form   string
	answer func(path string, n int) string
	calls  atomic.Int32
	last   atomic.Pointer[[]byte] // the last body sent
}

func (p *ignoringTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var req struct {
		N int `json:"n"`
	}
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		_ = json.Unmarshal(b, &req)
	}
	p.calls.Add(1)
	body := []byte(p.answer(r.URL.Path, max(req.N, 1)))
	if p.form != "compact" {
		body = gateway.EncodeAnswerAs(p.t, body, p.form)
	}
	p.last.Store(&body)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// proseWords is a model's text of n words (" lorem ipsum ..."), the
// kind cl100k_base splits into more tokens than words.
func proseWords(from, n int) string {
	vocab := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed eiusmod tempor incididunt labore dolore magna aliqua")
	var b strings.Builder
	for i := from; i < from+n; i++ {
		b.WriteString(" " + vocab[i%len(vocab)])
	}
	return b.String()
}

// endlessAnswers are whole answers that ignore max_tokens: text words
// of text in every choice, in each provider's API, with usage claiming
// one token. calls adds a tool call after the text.
func endlessAnswers(text int, calls bool) func(path string, n int) string {
	return func(path string, n int) string {
		t := proseWords(0, text)
		args := fmt.Sprintf(`{"city":%q}`, proseWords(7, 30))
		switch {
		case strings.HasSuffix(path, "/messages"):
			call := ""
			if calls {
				call = fmt.Sprintf(`,{"type":"tool_use","id":"toolu_1","name":"weather","input":%s}`, args)
			}
			return fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":%q}%s],`+
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}`, t, call)
		case strings.HasSuffix(path, "/responses"):
			return fmt.Sprintf(`{"id":"resp_1","object":"response","created_at":1,"status":"completed","incomplete_details":null,"model":"m","output":[`+
				`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}],`+
				`"usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}`, t)
		case strings.HasSuffix(path, "/completions") && !strings.HasSuffix(path, "/chat/completions"):
			return fmt.Sprintf(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"text":%q,"index":0,"logprobs":null,"finish_reason":"stop"}],`+
				`"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`, t)
		}
		var chs []string
		for i := range n {
			call := ""
			if calls {
				call = fmt.Sprintf(`,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":%q}}]`, args)
			}
			chs = append(chs, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":%q%s},"logprobs":null,"finish_reason":"stop"}`, i, t, call))
		}
		return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[` + strings.Join(chs, ",") +
			`],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`
	}
}

// relayedOutput reads a client's whole answer in its API: each
// answer's (choice's) output, counted as the gateway counts it for
// upstream model (tokens.Output), its usage's output count, whether it
// ends as a length stop, and how many calls it holds.
type relayedOutput struct {
	counts []int64 // each answer's
	usage  int64
	length bool
	calls  int
}

func (o relayedOutput) total() (n int64) {
	for _, c := range o.counts {
		n += c
	}
	return n
}

func readRelayed(t *testing.T, path string, body []byte, model string) relayedOutput {
	t.Helper()
	if !json.Valid(body) {
		t.Fatalf("the client's answer is not JSON: %s", body)
	}
	out := tokens.NewCounter(0).Output(model, protocol.BytesPerToken)
	defer out.Close()
	count := func(s string) int64 {
		_, n := out.Prefix(s, math.MaxInt32)
		return int64(n)
	}
	var o relayedOutput
	switch path {
	case "/v1/messages":
		var v struct {
			Content []struct {
				Type, Text string
				Input      jsontext.Value
			}
			StopReason string `json:"stop_reason"`
			Usage      struct {
				Output int64 `json:"output_tokens"`
			}
		}
		mustDecode(t, body, &v)
		var n int64
		for _, b := range v.Content {
			switch b.Type {
			case "text":
				n += count(b.Text)
			case "tool_use":
				o.calls++
				_ = b.Input.Compact()
				n += count(string(b.Input))
			}
		}
		o.counts, o.usage, o.length = []int64{n}, v.Usage.Output, v.StopReason == "max_tokens"
	case "/v1/responses":
		var v struct {
			Status     string
			Incomplete struct {
				Reason string
			} `json:"incomplete_details"`
			Output []struct {
				Type, Arguments string
				Content         []struct{ Type, Text string }
			}
			Usage struct {
				Output int64 `json:"output_tokens"`
			}
		}
		mustDecode(t, body, &v)
		var n int64
		for _, it := range v.Output {
			if it.Type == "function_call" {
				o.calls++
				n += count(it.Arguments)
			}
			for _, p := range it.Content {
				n += count(p.Text)
			}
		}
		o.counts, o.usage = []int64{n}, v.Usage.Output
		o.length = v.Status == "incomplete" && v.Incomplete.Reason == "max_output_tokens"
	default:
		var v struct {
			Choices []struct {
				Text    *string
				Message struct {
					Content   string
					ToolCalls []struct {
						Function struct{ Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				Completion int64 `json:"completion_tokens"`
			}
		}
		mustDecode(t, body, &v)
		o.length = len(v.Choices) > 0
		for _, ch := range v.Choices {
			var n int64
			if ch.Text != nil {
				n += count(*ch.Text)
			}
			n += count(ch.Message.Content)
			for _, c := range ch.Message.ToolCalls {
				o.calls++
				n += count(c.Function.Arguments)
			}
			o.counts = append(o.counts, n)
			o.length = o.length && ch.FinishReason == "length"
		}
		o.usage = v.Usage.Completion
	}
	return o
}

func mustDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("the client's answer does not decode (%v): %s", err, b)
	}
}

// A provider that ignores max_tokens in a whole answer has it cut where
// the request's output cap ends, plus the margin, by its meaning: in the
// client's own API (translated, bridged, native alike), a valid answer
// that ends as that API's length stop, holding at most the limit by the
// gateway's count, its usage that count, and the request logged, charged
// and billed what it holds, reason output_cap. However the provider
// writes its JSON (compact, pretty, every string escaped), the client
// gets the same. It was relayed whole and billed the provider's 1.
func TestOutputCapCutsAWholeAnswer(t *testing.T) {
	for _, c := range []struct {
		name, path, body string
		// upstream is the target's model name (its encoding), when not
		// the default config's.
		upstream string
		text     int  // words the provider writes
		withCall bool // and a call after them
		limit    int64
		// kept is the relayed count (what each answer gets: the limit
		// shared; less when a call does not fit).
		kept  []int64
		calls int
	}{
		{name: "openai chat", path: "/v1/chat/completions",
			body: `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: 1000, limit: 216, kept: []int64{216}},
		{name: "openai chat, no max_tokens: the model's default", path: "/v1/chat/completions",
			body: `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`,
			text: 1000, limit: 316, kept: []int64{316}},
		{name: "openai chat, n 2 share the limit", path: "/v1/chat/completions",
			body: `{"model":"mock-gpt","max_tokens":100,"n":2,"messages":[{"role":"user","content":"hi"}]}`,
			text: 1000, limit: 216, kept: []int64{108, 108}},
		{name: "openai chat, a call that does not fit goes", path: "/v1/chat/completions",
			body: `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: 200, withCall: true, limit: 216, kept: []int64{200}},
		{name: "openai chat, a model whose encoding is known", path: "/v1/chat/completions", upstream: "gpt-4o-mini",
			body: `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: 1000, limit: 216, kept: []int64{216}},
		{name: "openai chat, past 64 KiB", path: "/v1/chat/completions",
			body: `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: 20_000, limit: 216, kept: []int64{216}},
		{name: "anthropic messages", path: "/v1/messages",
			body: `{"model":"mock-claude","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: 1000, limit: 216, kept: []int64{216}},
		{name: "anthropic messages, a call that does not fit goes", path: "/v1/messages",
			body: `{"model":"mock-claude","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: 200, withCall: true, limit: 216, kept: []int64{200}},
		{name: "openai client, anthropic provider", path: "/v1/chat/completions",
			body: `{"model":"mock-claude","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: 1000, limit: 216, kept: []int64{216}},
		{name: "anthropic client, openai provider", path: "/v1/messages",
			body: `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`,
			text: 1000, limit: 216, kept: []int64{216}},
		{name: "completions", path: "/v1/completions",
			body: `{"model":"mock-gpt","max_tokens":200,"prompt":"hi"}`,
			text: 1000, limit: 216, kept: []int64{216}},
		{name: "responses", path: "/v1/responses",
			body: `{"model":"mock-gpt","max_output_tokens":200,"input":"hi"}`,
			text: 1000, limit: 216, kept: []int64{216}},
		{name: "responses, bridged to chat and translated", path: "/v1/responses",
			body: `{"model":"mock-claude","max_output_tokens":200,"input":"hi"}`,
			text: 1000, limit: 216, kept: []int64{216}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var first []byte
			for _, form := range []string{"compact", "pretty", "escaped"} {
				up := &ignoringTransport{t: t, form: form, answer: endlessAnswers(c.text, c.withCall)}
				s := newStack(t, mock.Config{}, func(cfg *config.Config) {
					cfg.Log.Format = "json"
					for i := range cfg.Models {
						cfg.Models[i].DefaultMaxTokens = 300
						if c.upstream != "" {
							cfg.Models[i].Targets[0].Model = c.upstream
						}
					}
				}, func(o *gateway.Options) { o.Transport = up })
				status, _, body := s.do(c.path, c.body, nil)
				if status != 200 {
					t.Fatalf("%s: status %d: %s", form, status, body)
				}
				// The default config's targets, both counted by the floor.
				model := map[bool]string{false: "mock-gpt-4o", true: "mock-claude-sonnet"}[strings.Contains(c.body, "mock-claude")]
				if c.upstream != "" {
					model = c.upstream
				}
				o := readRelayed(t, c.path, body, model)
				if !o.length {
					t.Errorf("%s: the answer does not end as a length stop: %.400s", form, body)
				}
				if fmt.Sprint(o.counts) != fmt.Sprint(c.kept) || o.total() > c.limit || o.calls != c.calls {
					t.Errorf("%s: the client got %v tokens (at most %d in all) and %d calls; want %v and %d", form, o.counts, c.limit, o.calls, c.kept, c.calls)
				}
				if o.usage != o.total() {
					t.Errorf("%s: the answer's usage says %d, it holds %d", form, o.usage, o.total())
				}
				l := logFields(t, s)
				if l["outcome"] != "ok" || l["reason"] != "output_cap" {
					t.Errorf("%s: logged %v/%v, want ok/output_cap", form, l["outcome"], l["reason"])
				}
				if out, _ := l["output_tokens"].(float64); int64(out) != o.total() {
					t.Errorf("%s: logged %v output tokens, want the %d relayed (the provider said 1)", form, l["output_tokens"], o.total())
				}
				if in, _ := l["input_tokens"].(float64); !costIs(l["cost_dollars"], model, int64(in), o.total()) {
					t.Errorf("%s: billed $%v for %v in and %d out", form, l["cost_dollars"], in, o.total())
				}
				// The same meaning, whatever the provider's bytes.
				if text := relayedText(t, body); first == nil {
					first = text
				} else if !bytes.Equal(text, first) {
					t.Errorf("%s: the client's answer differs from the compact one's:\n%s\n%s", form, text, first)
				}
			}
		})
	}
}

// costIs reports whether cost is what in and out tokens of model cost at
// the default config's prices (none for a model it does not price).
func costIs(cost any, model string, in, out int64) bool {
	price := map[string][2]float64{"mock-gpt-4o": {2.50, 10.00}, "mock-claude-sonnet": {3.00, 15.00}}
	p, ok := price[model]
	got, _ := cost.(float64)
	if !ok {
		return true
	}
	want := (float64(in)*p[0] + float64(out)*p[1]) / 1e6
	return math.Abs(got-want) <= 1e-6 // the ledger's micro-dollars
}

// relayedText is the texts and calls a client's answer holds, in order:
// what must not change with the provider's encoding (ids and times
// may: a translated answer is stamped when it is made).
func relayedText(t *testing.T, body []byte) []byte {
	var v any
	mustDecode(t, body, &v)
	var b bytes.Buffer
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range []string{"text", "content", "arguments", "input", "choices", "message", "output", "tool_calls", "function", "finish_reason", "stop_reason", "status"} {
				if e, ok := v[k]; ok {
					walk(e, k)
				}
			}
		case []any:
			for _, e := range v {
				walk(e, key)
			}
		case string:
			fmt.Fprintf(&b, "%s=%q\n", key, v)
		}
	}
	walk(v, "")
	return b.Bytes()
}

// A provider that keeps to max_tokens has its whole answer relayed byte
// for byte, however it writes it, and billed what it reported: the cut
// never touches an answer within its limit, even one at it.
func TestOutputCapLeavesAnHonestWholeAnswerAlone(t *testing.T) {
	for _, c := range []struct{ name, path, body, upstream string }{
		{"openai, at max_tokens", "/v1/chat/completions", `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"openai, a known encoding at max_tokens", "/v1/chat/completions", `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`, "gpt-4o"},
		{"anthropic, at max_tokens", "/v1/messages", `{"model":"mock-claude","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"completions, at max_tokens", "/v1/completions", `{"model":"mock-gpt","max_tokens":200,"prompt":"hi"}`, ""},
		{"responses, at max_output_tokens", "/v1/responses", `{"model":"mock-gpt","max_output_tokens":200,"input":"hi"}`, ""},
	} {
		for _, form := range []string{"compact", "pretty"} {
			t.Run(c.name+", "+form, func(t *testing.T) {
				// 200 words: 200 tokens by the floor, and by o200k_base
				// as many as the text takes, which is what is asked for.
				words := 200
				if c.upstream != "" {
					words = o200kWordsWithin(t, 200)
				}
				up := &ignoringTransport{t: t, form: form, answer: endlessAnswers(words, false)}
				s := newStack(t, mock.Config{}, func(cfg *config.Config) {
					cfg.Log.Format = "json"
					if c.upstream != "" {
						cfg.Models[0].Targets[0].Model = c.upstream
					}
				}, func(o *gateway.Options) { o.Transport = up })
				status, _, body := s.do(c.path, c.body, nil)
				if status != 200 {
					t.Fatalf("status %d: %s", status, body)
				}
				if sent := *up.last.Load(); !bytes.Equal(body, sent) {
					t.Errorf("the answer was changed:\n%.300s\nsent\n%.300s", body, sent)
				}
				l := logFields(t, s)
				if l["outcome"] != "ok" || l["reason"] != nil || l["output_tokens"] != 1.0 {
					t.Errorf("logged %v/%v with %v output tokens; want ok, no reason, the provider's 1", l["outcome"], l["reason"], l["output_tokens"])
				}
			})
		}
	}
}

// o200kWordsWithin is how many of proseWords' words make at most n
// tokens in o200k_base.
func o200kWordsWithin(t *testing.T, n int) int {
	c := tokens.NewCounter(0)
	w := 0
	for c.Count(tokens.O200kBase, proseWords(0, w+1)) <= n {
		w++
	}
	if w < n/4 {
		t.Fatalf("only %d words in %d tokens", w, n)
	}
	return w
}

// An answer the gateway cannot hold (past 4 MiB; here, past a limit the
// test sets) is relayed as it arrives, as before: it is not cut, its
// bytes are the provider's.
func TestOutputCapRelaysAnAnswerTooLargeToHold(t *testing.T) {
	gateway.LimitHeldAnswer(t, 64<<10)
	up := &ignoringTransport{t: t, form: "compact", answer: endlessAnswers(20_000, false)}
	s := newStack(t, mock.Config{}, func(cfg *config.Config) { cfg.Log.Format = "json" },
		func(o *gateway.Options) { o.Transport = up })
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 200 || !bytes.Equal(body, *up.last.Load()) {
		t.Fatalf("status %d, %d bytes of %d", status, len(body), len(*up.last.Load()))
	}
	if l := logFields(t, s); l["outcome"] != "ok" || l["reason"] != nil {
		t.Errorf("logged %v/%v", l["outcome"], l["reason"])
	}
}

// The provider's key is blanked before an answer is cut: a cut that
// falls inside the key leaves none of it, not its first letters.
func TestOutputCapCutsNoKeyInTwo(t *testing.T) {
	t.Setenv("SLUICE_TEST_OPENAI_KEY", openAIKey)
	// 212 words, then the key (sk, -, proj, -, ...: pieces that take the
	// count past 216), then more.
	text := proseWords(0, 212) + " " + openAIKey + proseWords(212, 300)
	up := &ignoringTransport{t: t, form: "compact", answer: func(string, int) string {
		return fmt.Sprintf(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`, text)
	}}
	s := newStack(t, mock.Config{}, func(cfg *config.Config) {
		cfg.Log.Format = "json"
		cfg.Providers[0].APIKeyEnv = "SLUICE_TEST_OPENAI_KEY"
	}, func(o *gateway.Options) { o.Transport = up })
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`, nil)
	o := readRelayed(t, "/v1/chat/completions", body, "mock-gpt-4o")
	if status != 200 || !o.length || o.total() != 216 {
		t.Fatalf("status %d, length %v, %d tokens: %s", status, o.length, o.total(), body)
	}
	if bytes.Contains(body, []byte(openAIKey[:7])) || !bytes.Contains(body, []byte("****")) {
		t.Errorf("the cut fell in the key and left its first letters: %s", body[len(body)-300:])
	}
}

// An answer held to be cut meets the idle timeout as a large one
// relayed does: a provider quiet partway has its call ended, and the
// client, who has had nothing, a 502 at once, not at the deadline.
func TestOutputCapHoldsAQuietAnswerNoLonger(t *testing.T) {
	answer := []byte(endlessAnswers(20_000, false)("/v1/chat/completions", 1))
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Server.StreamIdleTimeout = config.Duration(300 * time.Millisecond)
	}, func(o *gateway.Options) { o.Transport = quietTransport{answer[:80_000]} })
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 502 {
		t.Fatalf("status %d, want 502: %s", status, body)
	}
	if l := logFields(t, s); l["outcome"] != "upstream_error" || l["reason"] != "stream_idle" {
		t.Errorf("logged %v/%v, want upstream_error/stream_idle", l["outcome"], l["reason"])
	}
}

// A native provider's whole answer is cut as any other: its codec gives
// the gateway Anthropic's bytes, and the cut reads the client's API.
// Here Gemini's real codec, behind a provider that ignores
// maxOutputTokens, for both clients.
func TestOutputCapCutsANativeAnswer(t *testing.T) {
	if _, ok := vendors.Lookup(config.KindGemini); !ok {
		t.Skip("this build has no gemini codec")
	}
	t.Setenv(geminiKeyEnv, geminiKey)
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"mock-gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"mock-claude","max_tokens":200,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		for _, form := range []string{"compact", "pretty"} {
			up := &ignoringTransport{t: t, form: form, answer: func(path string, _ int) string {
				if !strings.HasSuffix(path, ":generateContent") {
					t.Errorf("the vendor was called at %s", path)
				}
				return fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":%q}],"role":"model"},"finishReason":"STOP","index":0}],`+
					`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1,"totalTokenCount":6},"modelVersion":"gemini-2.5-flash"}`, proseWords(0, 1000))
			}}
			s := newStack(t, mock.Config{}, func(cfg *config.Config) {
				cfg.Log.Format = "json"
				root := strings.TrimSuffix(cfg.Providers[0].BaseURL, "/v1")
				cfg.Providers = append(cfg.Providers, config.Provider{Name: "gem", Kind: config.KindGemini, BaseURL: root + "/v1beta", APIKeyEnv: geminiKeyEnv,
					Timeout: config.Duration(10 * time.Second)})
				onlyGemModel(cfg, "gemini-2.5-flash")
			}, func(o *gateway.Options) { o.Transport = up })
			status, _, body := s.do(c.path, c.body, nil)
			if status != 200 {
				t.Fatalf("%s, %s: status %d: %s", c.path, form, status, body)
			}
			o := readRelayed(t, c.path, body, "gemini-2.5-flash")
			if !o.length || o.total() != 216 || o.usage != 216 {
				t.Errorf("%s, %s: length stop %v, %d tokens, usage %d; want a length stop at 216: %.300s", c.path, form, o.length, o.total(), o.usage, body)
			}
			if l := logFields(t, s); l["reason"] != "output_cap" || l["output_tokens"] != 216.0 {
				t.Errorf("%s, %s: logged %v with %v output tokens", c.path, form, l["reason"], l["output_tokens"])
			}
		}
	}
}

// An answer to a request that declared structured output is checked
// whole, as it came; cut, it is no longer what was checked, and its
// verdict says so: invalid, cut at the output limit.
func TestOutputCapCutsAValidatedAnswer(t *testing.T) {
	up := newScripted(t, reply{text: fmt.Sprintf(`{"story":%q}`, proseWords(0, 1000))})
	s, _ := validationStack(t, up, config.OnInvalidAnnotate, "oa")
	status, hdr, body := s.do("/v1/chat/completions", `{"model":"gpt","max_tokens":200,"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`, nil)
	if o := readRelayed(t, "/v1/chat/completions", body, "oa-model"); status != 200 || !o.length || o.total() != 216 {
		t.Fatalf("status %d, length %v, %d tokens: %.300s", status, o.length, o.total(), body)
	}
	if hdr.Get("X-Sluice-Validation") != "invalid" || !strings.Contains(hdr.Get("X-Sluice-Validation-Reason"), "output limit") {
		t.Errorf("X-Sluice-Validation %q (%q), want invalid: cut at the output limit", hdr.Get("X-Sluice-Validation"), hdr.Get("X-Sluice-Validation-Reason"))
	}
}
