package mock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The single-request faults (faults.go), each in both dialects,
// streaming and whole, over real HTTP on loopback, checked by the bytes
// a client reads. Silences are a few hundred milliseconds: the headers'
// durations are real time, and a script's are scaled (TestScaledStall).

// dialect is one API's chat endpoint, with what tells its events apart.
type dialect struct {
	name, path string
	// body is a request for "hello there": streaming or not.
	body func(stream bool) string
	// token reports whether an event carries answer text, end whether it
	// is the stream's end marker, finish whether it carries the finish
	// reason and usage.
	token, end, finish func(ev event) bool
}

var dialects = []dialect{
	{
		name: "openai", path: "/v1/chat/completions",
		body: func(stream bool) string {
			return `{"model":"m","stream":` + boolJSON(stream) + `,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}]}`
		},
		token:  func(ev event) bool { return strings.Contains(ev.data, `"delta":{"content":" `) },
		end:    func(ev event) bool { return ev.data == "[DONE]" },
		finish: func(ev event) bool { return strings.Contains(ev.data, `"finish_reason":"stop"`) },
	},
	{
		name: "anthropic", path: "/v1/messages",
		body: func(stream bool) string {
			return `{"model":"m","stream":` + boolJSON(stream) + `,"max_tokens":99,"system":"be brief","messages":[{"role":"user","content":"hello there"}]}`
		},
		token: func(ev event) bool { return ev.name == "content_block_delta" && json.Valid([]byte(ev.data)) },
		end:   func(ev event) bool { return ev.name == "message_stop" },
		finish: func(ev event) bool {
			return ev.name == "message_delta" && strings.Contains(ev.data, `"stop_reason":"end_turn"`)
		},
	},
}

func boolJSON(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// timedEvent is an event and when it arrived, from the request's start.
type timedEvent struct {
	event
	at time.Duration
}

// streamed is what a client read from one streaming call.
type streamed struct {
	status  int
	headers time.Duration // when the response headers arrived
	events  []timedEvent
	err     error         // what ended the body: nil for a clean end
	ended   time.Duration // when it ended
}

func (s streamed) count(match func(event) bool) int {
	n := 0
	for _, ev := range s.events {
		if match(ev.event) {
			n++
		}
	}
	return n
}

// gap is the longest silence between consecutive events, counting the
// headers as the first and the body's end as the last.
func (s streamed) gap() time.Duration {
	var longest time.Duration
	prev := s.headers
	for _, ev := range s.events {
		longest = max(longest, ev.at-prev)
		prev = ev.at
	}
	if s.ended > 0 {
		longest = max(longest, s.ended-prev)
	}
	return longest
}

func streamCall(t *testing.T, ctx context.Context, url string, d dialect, hdr ...string) streamed {
	t.Helper()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+d.path, strings.NewReader(d.body(true)))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return streamed{err: err}
	}
	defer resp.Body.Close()
	out := streamed{status: resp.StatusCode, headers: time.Since(start)}
	r := newSSE(resp.Body)
	for {
		ev, err := r.next()
		if err != nil {
			if err != io.EOF {
				out.err = err
			}
			out.ended = time.Since(start)
			return out
		}
		out.events = append(out.events, timedEvent{ev, time.Since(start)})
	}
}

// wholeCall reads a non-streaming answer: status, when the headers
// came, the body and what ended it.
func wholeCall(t *testing.T, url string, d dialect, hdr ...string) (status int, headers time.Duration, body []byte, err error) {
	t.Helper()
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, url+d.path, strings.NewReader(d.body(false)))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, nil, err
	}
	defer resp.Body.Close()
	headers = time.Since(start)
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, headers, body, err
}

// wholeText is a whole answer's text in either dialect.
func wholeText(t *testing.T, body []byte) string {
	t.Helper()
	m := jsonOf(t, string(body))
	if s, ok := path(m, "choices", 0, "message", "content").(string); ok {
		return s
	}
	s, _ := path(m, "content", 0, "text").(string)
	return s
}

// streamText joins a stream's answer text in either dialect.
func streamText(t *testing.T, s streamed) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range s.events {
		if !json.Valid([]byte(ev.data)) {
			continue
		}
		m := jsonOf(t, ev.data)
		if v, ok := path(m, "choices", 0, "delta", "content").(string); ok {
			b.WriteString(v)
		}
		if v, ok := path(m, "delta", "text").(string); ok {
			b.WriteString(v)
		}
	}
	return b.String()
}

const six = "6" // the answer's length in the tests below

func TestHangForThenAnswers(t *testing.T) {
	_, url := startMock(t, instant())
	for _, d := range dialects {
		s := streamCall(t, context.Background(), url, d, HeaderFail, "hang:250ms", HeaderOutputTokens, six)
		if s.err != nil || s.headers < 250*time.Millisecond || s.count(d.token) != 6 || s.count(d.end) != 1 {
			t.Errorf("%s stream: headers after %v, %d tokens, %d end markers, err %v; want 250ms of silence then the whole answer",
				d.name, s.headers, s.count(d.token), s.count(d.end), s.err)
		}
		status, headers, body, err := wholeCall(t, url, d, HeaderFail, "hang:250ms")
		if status != 200 || err != nil || headers < 250*time.Millisecond || !json.Valid(body) {
			t.Errorf("%s whole: %d after %v, err %v: %s", d.name, status, headers, err, body)
		}
	}
}

// Silence before the first token: the headers, then nothing, then the
// answer.
func TestStallBeforeFirstToken(t *testing.T) {
	_, url := startMock(t, instant())
	for _, d := range dialects {
		s := streamCall(t, context.Background(), url, d, HeaderFail, "stall:0:300ms", HeaderOutputTokens, six)
		if s.headers > 150*time.Millisecond || len(s.events) == 0 || s.events[0].at < 300*time.Millisecond {
			t.Errorf("%s stream: headers after %v, first event after %v; want headers at once and 300ms of silence",
				d.name, s.headers, s.events[0].at)
		}
		if s.err != nil || s.count(d.token) != 6 || s.count(d.end) != 1 {
			t.Errorf("%s stream: %d tokens, %d end markers, err %v after the stall", d.name, s.count(d.token), s.count(d.end), s.err)
		}
		status, headers, body, err := wholeCall(t, url, d, HeaderFail, "stall:0:300ms")
		if status != 200 || err != nil || headers > 150*time.Millisecond || !json.Valid(body) {
			t.Errorf("%s whole: %d, headers after %v, err %v: %s", d.name, status, headers, err, body)
		}
	}
}

func TestStallMidStream(t *testing.T) {
	_, url := startMock(t, instant())
	for _, d := range dialects {
		// Resume: every token, a 200ms hole after the third.
		s := streamCall(t, context.Background(), url, d, HeaderFail, "stall:3:200ms", HeaderOutputTokens, six)
		if s.err != nil || s.count(d.token) != 6 || s.count(d.end) != 1 || s.gap() < 80*time.Millisecond {
			t.Errorf("%s resume: %d tokens, %d end markers, longest gap %v, err %v", d.name, s.count(d.token), s.count(d.end), s.gap(), s.err)
		}
		for _, c := range []struct {
			then  string
			clean bool
		}{{"eof", true}, {"truncate", false}, {"reset", false}} {
			s := streamCall(t, context.Background(), url, d, HeaderFail, "stall:3:100ms:"+c.then, HeaderOutputTokens, six)
			if (s.err == nil) != c.clean || s.count(d.token) != 3 || s.count(d.end) != 0 || s.count(d.finish) != 0 || s.gap() < 80*time.Millisecond {
				t.Errorf("%s then %s: %d tokens, %d end markers, %d finishes, gap %v, err %v",
					d.name, c.then, s.count(d.token), s.count(d.end), s.count(d.finish), s.gap(), s.err)
			}
		}
		// Forever: three tokens, then nothing until the client gives up.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		s = streamCall(t, ctx, url, d, HeaderFail, "stall:3", HeaderOutputTokens, six)
		cancel()
		if !errors.Is(s.err, context.DeadlineExceeded) || s.count(d.token) != 3 {
			t.Errorf("%s forever: %d tokens, err %v", d.name, s.count(d.token), s.err)
		}
		// A whole answer: the headers, a silence, then the body.
		status, headers, body, err := wholeCall(t, url, d, HeaderFail, "stall:3:200ms", HeaderOutputTokens, six)
		if status != 200 || err != nil || headers > 150*time.Millisecond || !json.Valid(body) {
			t.Errorf("%s whole: %d, headers after %v, err %v: %s", d.name, status, headers, err, body)
		}
	}
}

// A scripted stall's silence scales with the time scale.
func TestScaledStall(t *testing.T) {
	cfg := instant()
	cfg.OutputTokens = TokenRange{Min: 4}
	cfg.Failures = []Failure{{Kind: FailStall, AfterTokens: 2, For: 10 * time.Second}}
	_, url := startMock(t, cfg.Scaled(0.02))
	s := streamCall(t, context.Background(), url, dialects[0])
	if s.err != nil || s.count(dialects[0].token) != 4 || s.gap() < 200*time.Millisecond || s.gap() > 2*time.Second {
		t.Errorf("a 10s stall at 0.02: gap %v, %d tokens, err %v; want about 200ms", s.gap(), s.count(dialects[0].token), s.err)
	}
}

// A cut after N tokens: a clean end (eof), a closed connection
// (truncate) or a reset, streaming and whole.
func TestCutsAfterNTokens(t *testing.T) {
	_, url := startMock(t, instant())
	for _, d := range dialects {
		for _, c := range []struct {
			kind  string
			clean bool
		}{{"eof", true}, {"truncate", false}, {"reset", false}} {
			s := streamCall(t, context.Background(), url, d, HeaderFail, c.kind+":4", HeaderOutputTokens, six, HeaderWords, "prompt")
			if (s.err == nil) != c.clean || s.count(d.token) != 4 || s.count(d.end) != 0 || s.count(d.finish) != 0 {
				t.Errorf("%s %s stream: %d tokens, %d end markers, %d finishes, err %v",
					d.name, c.kind, s.count(d.token), s.count(d.end), s.count(d.finish), s.err)
			}
			// A whole answer's body ends just after the fourth word.
			want, _ := ExpectedAnswer([]byte(d.body(false)), 6)
			four := " " + strings.Join(strings.Fields(want)[:4], " ")
			status, _, body, err := wholeCall(t, url, d, HeaderFail, c.kind+":4", HeaderOutputTokens, six, HeaderWords, "prompt")
			if status != 200 || (err == nil) != c.clean || !strings.HasSuffix(string(body), `":"`+four) {
				t.Errorf("%s %s whole: %d, err %v, body %s; want it to end with %q", d.name, c.kind, status, err, body, four)
			}
			if json.Valid(body) {
				t.Errorf("%s %s whole: the cut body is whole JSON: %s", d.name, c.kind, body)
			}
		}
	}
}

func TestMalformedAfterNTokens(t *testing.T) {
	_, url := startMock(t, instant())
	bad := func(ev event) bool { return ev.data != "[DONE]" && !json.Valid([]byte(ev.data)) }
	for _, d := range dialects {
		s := streamCall(t, context.Background(), url, d, HeaderFail, "malformed:3:resume", HeaderOutputTokens, six)
		if s.err != nil || s.count(bad) != 1 || s.count(d.token) != 6 || s.count(d.end) != 1 {
			t.Errorf("%s resume: %d bad events, %d tokens, %d end markers, err %v", d.name, s.count(bad), s.count(d.token), s.count(d.end), s.err)
		}
		if i := indexOf(s, bad); i < 0 || countBefore(s, i, d.token) != 3 {
			t.Errorf("%s resume: the bad event is not after the third token: %v", d.name, s.events)
		}
		s = streamCall(t, context.Background(), url, d, HeaderFail, "malformed:3", HeaderOutputTokens, six)
		if s.err != nil || s.count(bad) != 1 || s.count(d.token) != 3 || s.count(d.end) != 0 || !bad(s.events[len(s.events)-1].event) {
			t.Errorf("%s: %d bad events, %d tokens, %d end markers, err %v; want 3 tokens, the bad event last, a clean end",
				d.name, s.count(bad), s.count(d.token), s.count(d.end), s.err)
		}
	}
}

func indexOf(s streamed, match func(event) bool) int {
	for i, ev := range s.events {
		if match(ev.event) {
			return i
		}
	}
	return -1
}

func countBefore(s streamed, i int, match func(event) bool) int {
	return streamed{events: s.events[:i]}.count(match)
}

// A stream complete but for its end marker.
func TestNoDone(t *testing.T) {
	_, url := startMock(t, instant())
	for _, d := range dialects {
		s := streamCall(t, context.Background(), url, d, HeaderFail, "no_done", HeaderOutputTokens, six)
		if s.err != nil || s.count(d.token) != 6 || s.count(d.finish) != 1 || s.count(d.end) != 0 {
			t.Errorf("%s: %d tokens, %d finishes, %d end markers, err %v; want all but the end marker, cleanly",
				d.name, s.count(d.token), s.count(d.finish), s.count(d.end), s.err)
		}
		usage := func(ev event) bool {
			return strings.Contains(ev.data, `"usage":{`) && strings.Contains(ev.data, `tokens":6`)
		}
		if s.count(usage) != 1 {
			t.Errorf("%s: the usage did not arrive: %v", d.name, s.events)
		}
		last := s.events[len(s.events)-1]
		if !d.finish(last.event) && !usage(last.event) {
			t.Errorf("%s: the stream ends with %v", d.name, last)
		}
		status, _, body, err := wholeCall(t, url, d, HeaderFail, "no_done")
		if status != 200 || err != nil || !json.Valid(body) {
			t.Errorf("%s whole: %d, err %v: %s", d.name, status, err, body)
		}
	}
}

var anthropicTooLong = regexp.MustCompile(`^prompt is too long: (\d+) tokens > (\d+) maximum$`)

// errorOf reads an error answer: status, OpenAI's error object or
// Anthropic's.
func errorOf(t *testing.T, status int, body []byte) (int, map[string]any) {
	t.Helper()
	m := jsonOf(t, string(body))
	e, _ := m["error"].(map[string]any)
	if e == nil {
		t.Fatalf("no error object: %s", body)
	}
	if _, anth := m["type"]; anth && m["type"] != "error" {
		t.Errorf("Anthropic error's type is %v", m["type"])
	}
	return status, e
}

func TestContextLength(t *testing.T) {
	_, url := startMock(t, instant())
	for _, stream := range []bool{false, true} {
		for _, d := range dialects {
			body := d.body(stream)
			for _, hdr := range [][]string{
				{HeaderFail, "context_length"},
				{HeaderContextWindow, "3"}, // "be brief" and "hello there": 5 tokens
			} {
				resp := postJSON(t, context.Background(), url+d.path, body, hdr...)
				b, _ := io.ReadAll(resp.Body)
				status, e := errorOf(t, resp.StatusCode, b)
				if status != 400 || e["type"] != "invalid_request_error" {
					t.Errorf("%s %v: %d %s", d.name, hdr, status, b)
				}
				switch d.name {
				case "openai":
					if e["code"] != "context_length_exceeded" || e["param"] != "messages" ||
						!strings.Contains(e["message"].(string), "maximum context length is") {
						t.Errorf("openai %v: %s", hdr, b)
					}
					if hdr[0] == HeaderContextWindow && !strings.Contains(e["message"].(string), "is 3 tokens. However, your messages resulted in 5 tokens") {
						t.Errorf("openai window: %s", b)
					}
				case "anthropic":
					m := anthropicTooLong.FindStringSubmatch(e["message"].(string))
					if m == nil || (hdr[0] == HeaderContextWindow && (m[1] != "5" || m[2] != "3")) {
						t.Errorf("anthropic %v: %s", hdr, b)
					}
				}
			}
			// A prompt inside the window is answered.
			resp := postJSON(t, context.Background(), url+d.path, body, HeaderContextWindow, "5")
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != 200 {
				t.Errorf("%s: a 5-token prompt in a 5-token window got %d", d.name, resp.StatusCode)
			}
		}
	}
	// The script's context_window does it for every call.
	cfg := instant()
	cfg.ContextWindow = 4
	s, url2 := startMock(t, cfg)
	resp := postJSON(t, context.Background(), url2+"/v1/messages", dialects[1].body(false))
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "prompt is too long: 5 tokens > 4 maximum") {
		t.Errorf("context_window 4: %d %s", resp.StatusCode, b)
	}
	if st := s.Stats(); st.BadRequests != 1 || st.ErrorsInjected != 0 {
		t.Errorf("an over-long prompt is the request's fault: %+v", st)
	}
}

func TestContentFilter(t *testing.T) {
	s, url := startMock(t, instant())
	for _, d := range dialects {
		resp := postJSON(t, context.Background(), url+d.path, d.body(true), HeaderFail, "content_filter")
		b, _ := io.ReadAll(resp.Body)
		status, e := errorOf(t, resp.StatusCode, b)
		switch d.name {
		case "openai":
			if status != 400 || e["code"] != "content_filter" || path(e, "innererror", "code") != "ResponsibleAIPolicyViolation" ||
				path(e, "innererror", "content_filter_result", "violence", "filtered") != true {
				t.Errorf("openai: %d %s", status, b)
			}
		case "anthropic":
			if status != 400 || e["type"] != "invalid_request_error" || e["message"] != "Output blocked by content filtering policy" {
				t.Errorf("anthropic: %d %s", status, b)
			}
		}
	}
	if st := s.Stats(); st.ErrorsInjected != 2 {
		t.Errorf("stats %+v", st)
	}
}

// prefilled is a request continuing an answer that starts with prefix,
// in each dialect's way.
func prefilled(d dialect, stream bool, prefix string) string {
	pre, _ := json.Marshal(prefix)
	var q map[string]any
	json.Unmarshal([]byte(d.body(stream)), &q)
	msgs := q["messages"].([]any)
	q["messages"] = append(msgs, map[string]any{"role": "assistant", "content": json.RawMessage(pre)})
	if d.name == "openai" {
		q["continue_final_message"], q["add_generation_prompt"] = true, false
	}
	b, _ := json.Marshal(q)
	return string(b)
}

func TestPrefillRefused(t *testing.T) {
	cfg := instant()
	cfg.AssistantPrefill = "refuse"
	s, url := startMock(t, cfg)
	for _, d := range dialects {
		resp := postJSON(t, context.Background(), url+d.path, prefilled(d, true, "lorem ipsum"))
		b, _ := io.ReadAll(resp.Body)
		status, e := errorOf(t, resp.StatusCode, b)
		if status != 400 || e["type"] != "invalid_request_error" || !strings.Contains(e["message"].(string), "must end with a user message") {
			t.Errorf("%s: %d %s", d.name, status, b)
		}
	}
	// An OpenAI request that ends with the assistant's turn but does not
	// ask to continue it is no prefill.
	resp := postJSON(t, context.Background(), url+"/v1/chat/completions",
		`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		t.Errorf("a trailing assistant turn without continue_final_message got %d", resp.StatusCode)
	}
	// The header allows it for one call.
	resp = postJSON(t, context.Background(), url+"/v1/messages", prefilled(dialects[1], false, "x"), HeaderPrefill, "allow")
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		t.Errorf("X-Mock-Prefill: allow got %d", resp.StatusCode)
	}
	if st := s.Stats(); st.BadRequests != 2 {
		t.Errorf("stats %+v", st)
	}
}

// With words from the prompt, every call and both dialects give a prompt
// one answer (ExpectedAnswer), and a prefilled call continues it after
// the prefill's words: the cut part and the continuation make the whole
// answer exactly once.
func TestPrefillContinues(t *testing.T) {
	cfg := instant()
	cfg.Words = "prompt"
	cfg.OutputTokens = TokenRange{Min: 10}
	_, url := startMock(t, cfg)
	want, err := ExpectedAnswer([]byte(dialects[0].body(false)), 10)
	if err != nil || len(strings.Fields(want)) != 10 {
		t.Fatalf("ExpectedAnswer: %q, %v", want, err)
	}
	words := strings.SplitAfter(want, " ")[1:] // "", then "w1 ", "w2 ", ...
	prefix := " " + strings.TrimSpace(strings.Join(words[:4], ""))
	for _, d := range dialects {
		if got, _ := ExpectedAnswer([]byte(d.body(false)), 10); got != want {
			t.Errorf("%s: ExpectedAnswer %q differs across dialects from %q", d.name, got, want)
		}
		_, _, body, _ := wholeCall(t, url, d)
		if got := wholeText(t, body); got != want {
			t.Errorf("%s whole: %q, want %q", d.name, got, want)
		}
		if got := streamText(t, streamCall(t, context.Background(), url, d)); got != want {
			t.Errorf("%s stream: %q, want %q", d.name, got, want)
		}
		// A continuation after the first four words, as a gateway sends it
		// (Anthropic refuses a prefill with trailing whitespace).
		resp := postJSON(t, context.Background(), url+d.path, prefilled(d, false, strings.TrimSpace(prefix)))
		b, _ := io.ReadAll(resp.Body)
		if got := wholeText(t, b); prefix+got != want {
			t.Errorf("%s continuation: %q after %q, want the rest of %q", d.name, got, prefix, want)
		}
		m := jsonOf(t, string(b))
		if out := path(m, "usage", "completion_tokens"); out != nil && out != 6.0 {
			t.Errorf("%s continuation: usage %v, want 6 completion tokens", d.name, m["usage"])
		}
		if out := path(m, "usage", "output_tokens"); out != nil && out != 6.0 {
			t.Errorf("%s continuation: usage %v, want 6 output tokens", d.name, m["usage"])
		}
		req, _ := http.NewRequest(http.MethodPost, url+d.path, strings.NewReader(prefilled(d, true, strings.TrimSpace(prefix))))
		sresp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		evs, _ := newSSE(bufio.NewReader(sresp.Body)).all()
		sresp.Body.Close()
		var s streamed
		for _, ev := range evs {
			s.events = append(s.events, timedEvent{event: ev})
		}
		if got := streamText(t, s); prefix+got != want {
			t.Errorf("%s streamed continuation: %q after %q, want the rest of %q", d.name, got, prefix, want)
		}
	}
	// With the default words, calls differ but a continuation still skips
	// the prefill's words: a ten-word answer continued after four is six.
	_, url2 := startMock(t, Config{Seed: 3, OutputTokens: TokenRange{Min: 10}})
	resp := postJSON(t, context.Background(), url2+"/v1/messages", prefilled(dialects[1], false, "a b c d"))
	b, _ := io.ReadAll(resp.Body)
	if got := wholeText(t, b); len(strings.Fields(got)) != 6 {
		t.Errorf("seeded continuation: %q, want six words", got)
	}
}

func TestFaultHeaders(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Failure
	}{
		{"truncate:3", Failure{Kind: FailTruncate, AfterTokens: 3}},
		{"hang:30s", Failure{Kind: FailHang, For: 30 * time.Second}},
		{"stall:40:5s:reset", Failure{Kind: FailStall, AfterTokens: 40, For: 5 * time.Second, Then: "reset"}},
		{"Malformed:40:resume", Failure{Kind: FailMalformed, AfterTokens: 40, Then: "resume"}},
		{"no_done", Failure{Kind: FailNoDone}},
		{"context_length", Failure{Kind: FailContextLength}},
		{"503", Failure{Kind: FailStatus, Status: 503}},
	} {
		f, err := parseFail(c.in)
		if err != nil || *f != c.want {
			t.Errorf("parseFail(%q) = %+v, %v; want %+v", c.in, f, err, c.want)
		}
	}
	for _, bad := range []string{"stall:soon", "stall:3:reset", "truncate:3:resume", "no_done:3", "hang:-1s"} {
		if f, err := parseFail(bad); err == nil {
			t.Errorf("parseFail(%q) = %+v, want an error", bad, f)
		}
	}
	_, url := startMock(t, instant())
	for _, hdr := range [][]string{{HeaderContextWindow, "-3"}, {HeaderPrefill, "sometimes"}, {HeaderWords, "dice"}, {HeaderFail, "stall:x"}} {
		resp := postJSON(t, context.Background(), url+"/v1/chat/completions", tinyChat, hdr...)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), hdr[0]) {
			t.Errorf("%v: %d %s", hdr, resp.StatusCode, b)
		}
	}
}

// testdata/faults.yaml, the commented example of every fault, parses.
func TestFaultsScript(t *testing.T) {
	cfg, err := LoadScript("testdata/faults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Failures) != 12 || cfg.ContextWindow != 100000 || cfg.Words != "prompt" || cfg.Failures[7].Then != "reset" {
		t.Errorf("faults.yaml read as %+v", cfg)
	}
}
