package mock

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/sseenc"
)

// meaning is what a stream says, whatever its bytes: the text joined,
// the finish, the output tokens, whether its end marker came; and the
// keepalives it carried.
type meaning struct {
	Text   string
	Finish string
	Usage  int
	End    bool
	Pings  int
	// Call and Args are the tool call's name and arguments, joined.
	Call, Args string
}

// wireDialect is one streaming endpoint, its request and its reader.
type wireDialect struct {
	name, path, body string
	read             func(m *meaning, data map[string]any)
}

func jstr(v any) string { s, _ := v.(string); return s }

func jnum(v any) int { f, _ := v.(float64); return int(f) }

func jobj(v any) map[string]any { m, _ := v.(map[string]any); return m }

var wireDialects = []wireDialect{
	{"chat", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"tell me a story"}]}`,
		func(m *meaning, d map[string]any) {
			for _, c := range d["choices"].([]any) {
				delta := jobj(jobj(c)["delta"])
				m.Text += jstr(delta["content"])
				m.Finish += jstr(jobj(c)["finish_reason"])
				if calls, _ := delta["tool_calls"].([]any); len(calls) > 0 {
					m.Call += jstr(jobj(jobj(calls[0])["function"])["name"])
					m.Args += jstr(jobj(jobj(calls[0])["function"])["arguments"])
				}
			}
			m.Usage += jnum(jobj(d["usage"])["completion_tokens"])
		}},
	{"completions", "/v1/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"prompt":"tell me a story"}`,
		func(m *meaning, d map[string]any) {
			for _, c := range d["choices"].([]any) {
				m.Text += jstr(jobj(c)["text"])
				m.Finish += jstr(jobj(c)["finish_reason"])
			}
			m.Usage += jnum(jobj(d["usage"])["completion_tokens"])
		}},
	{"messages", "/v1/messages", `{"model":"m","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"tell me a story"}]}`,
		func(m *meaning, d map[string]any) {
			switch jstr(d["type"]) {
			case "content_block_start":
				if b := jobj(d["content_block"]); jstr(b["type"]) == "tool_use" {
					m.Call += jstr(b["name"])
				}
			case "content_block_delta":
				m.Text += jstr(jobj(d["delta"])["text"])
				m.Args += jstr(jobj(d["delta"])["partial_json"])
			case "message_delta":
				m.Finish += jstr(jobj(d["delta"])["stop_reason"])
				m.Usage += jnum(jobj(d["usage"])["output_tokens"])
			case "message_stop":
				m.End = true
			case "ping":
				m.Pings++
			}
		}},
	{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"tell me a story"}`,
		func(m *meaning, d map[string]any) {
			switch jstr(d["type"]) {
			case "response.output_text.delta":
				m.Text += jstr(d["delta"])
			case "response.output_item.added":
				if it := jobj(d["item"]); jstr(it["type"]) == "function_call" {
					m.Call += jstr(it["name"])
				}
			case "response.function_call_arguments.delta":
				m.Args += jstr(d["delta"])
			case "response.completed", "response.incomplete":
				m.Finish += jstr(jobj(d["response"])["status"])
				m.Usage += jnum(jobj(jobj(d["response"])["usage"])["output_tokens"])
				m.End = true
			}
		}},
}

// streamOf reads one stream under enc (and extra header pairs), by the
// SSE specification (sseenc.Decode) and encoding/json, and returns its
// meaning, its raw bytes and its comment lines.
func streamOf(t *testing.T, url string, d wireDialect, enc string, hdr ...string) (meaning, string, int) {
	t.Helper()
	hdr = append([]string{HeaderWords, "prompt", HeaderOutputTokens, "12", HeaderEncoding, enc}, hdr...)
	resp := postJSON(t, context.Background(), url+d.path, d.body, hdr...)
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %v: %s", d.name, enc, resp.StatusCode, err, raw)
	}
	events, comments := sseenc.Decode(string(raw))
	var m meaning
	for _, ev := range events {
		if ev.Data == "[DONE]" {
			m.End = true
			continue
		}
		var data map[string]any
		if err := json.Unmarshal([]byte(ev.Data), &data); err != nil {
			t.Fatalf("%s %s: an event's data is not JSON: %v: %q", d.name, enc, err, ev.Data)
		}
		d.read(&m, data)
	}
	return m, string(raw), comments
}

// The mock under every encoding says what it says in compact: the same
// words, finish, usage and end, and the one difference each stream-level
// word asks for.
func TestEveryEncodingMeansTheSameAsCompact(t *testing.T) {
	_, url := startMock(t, instant())
	encodings := append(sseenc.Words(), "pydefault+crlf", "pretty+noevent+cr", "shuffle+escaped+slashes+nospace+idretry+comments", "sortkeys+pretty+pydefault+oaievent")
	for _, d := range wireDialects {
		want, compact, _ := streamOf(t, url, d, "compact")
		if want.Text == "" || len(strings.Fields(want.Text)) != 12 || want.Finish == "" || want.Usage != 12 || !want.End {
			t.Fatalf("%s compact: %+v", d.name, want)
		}
		for _, enc := range encodings {
			got, raw, _ := streamOf(t, url, d, enc)
			e := sseenc.MustParse(enc)
			w := want
			if e.NoDone() && d.name != "responses" {
				w.End = false
			}
			if e.NoPing() {
				w.Pings = 0
			}
			if got != w {
				t.Errorf("%s %s:\n got %+v\nwant %+v\n%s", d.name, enc, got, w, raw)
			}
			if strings.Contains(enc, "spaced") && (raw == compact || !strings.Contains(raw, `": "`)) {
				t.Errorf("%s %s: the JSON is not spaced:\n%s", d.name, enc, raw)
			}
		}
	}
}

// usagelast: a usage chunk after the finish even when the request did
// not ask for one.
func TestUsageLastSendsUsageUnasked(t *testing.T) {
	_, url := startMock(t, instant())
	d := wireDialects[0]
	d.body = strings.Replace(d.body, `"stream_options":{"include_usage":true},`, "", 1)
	if m, _, _ := streamOf(t, url, d, "compact"); m.Usage != 0 {
		t.Fatalf("compact without include_usage: usage %d", m.Usage)
	}
	m, raw, _ := streamOf(t, url, d, "usagelast+spaced")
	if m.Usage != 12 || !strings.Contains(raw, `"choices": [], `) {
		t.Errorf("usagelast: usage %d:\n%s", m.Usage, raw)
	}
}

// A stall with keepalive or pings is not silent, and adds no token:
// comments every interval, or Anthropic pings once the head is out (a
// comment before it, and in wireDialects without pings).
func TestStallKeepalivesAreNotProgress(t *testing.T) {
	_, url := startMock(t, instant())
	for _, c := range []struct {
		d              wireDialect
		enc, fail      string
		pings, comment int // at least this many during the stall
		firstIsStart   bool
	}{
		{wireDialects[0], "keepalive:40ms", "stall:4:300ms", 0, 4, false},
		{wireDialects[0], "pings:40ms+crlf", "stall:4:300ms", 0, 4, false},
		{wireDialects[2], "pings:40ms+spaced", "stall:4:300ms", 4, 0, false},
		{wireDialects[2], "pings:40ms+keepalive", "stall:4:300ms", 4, 4, false},
		{wireDialects[2], "pings:40ms", "stall:0:300ms", 0, 4, true},
		{wireDialects[3], "keepalive:40ms+noevent", "stall:6:300ms", 0, 4, false},
	} {
		want, _, _ := streamOf(t, url, c.d, "compact")
		got, raw, comments := streamOf(t, url, c.d, c.enc, HeaderFail, c.fail)
		pings := got.Pings - want.Pings
		got.Pings = want.Pings
		if got != want || pings < c.pings || comments < c.comment || (c.comment == 0 && comments != 0) || (c.pings == 0 && pings != 0) {
			t.Errorf("%s %s %s: %+v, %d pings, %d comments; want %+v, %d+ pings, %d+ comments\n%s", c.d.name, c.enc, c.fail, got, pings, comments, want, c.pings, c.comment, raw)
		}
		if evs, _ := sseenc.Decode(raw); c.firstIsStart && !strings.Contains(evs[0].Data, "message_start") {
			t.Errorf("%s %s %s: the stream starts with %q, not message_start", c.d.name, c.enc, c.fail, evs[0].Data)
		}
	}
}

// A malformed event and no_done keep working under an encoding.
func TestFaultsUnderAnEncoding(t *testing.T) {
	_, url := startMock(t, instant())
	for _, d := range wireDialects[:3] {
		m, raw, _ := streamOf(t, url, d, "pretty+crlf", HeaderFail, "no_done")
		if m.End || m.Usage != 12 || m.Finish == "" {
			t.Errorf("%s no_done pretty+crlf: %+v\n%s", d.name, m, raw)
		}
		resp := postJSON(t, context.Background(), url+d.path, d.body, HeaderEncoding, "cr+spaced", HeaderFail, "malformed:3")
		b, _ := io.ReadAll(resp.Body)
		evs, _ := sseenc.Decode(string(b))
		last := evs[len(evs)-1].Data
		if strings.Contains(string(b), "\n") || json.Valid([]byte(last)) || !strings.HasSuffix(string(b), "\r\r") {
			t.Errorf("%s malformed under cr: the last event %q should be cut JSON, ended by CR CR:\n%q", d.name, last, b)
		}
	}
}

// The shuffle draws from the call's seed: equal seeds, equal bytes.
func TestShuffleReplaysFromTheSeed(t *testing.T) {
	var raws []string
	for range 2 {
		_, url := startMock(t, instant())
		_, raw, _ := streamOf(t, url, wireDialects[2], "shuffle")
		raws = append(raws, raw)
	}
	if raws[0] != raws[1] {
		t.Errorf("two mocks with one seed shuffled differently:\n%s\n%s", raws[0], raws[1])
	}
}

func TestEncodingSettings(t *testing.T) {
	_, url := startMock(t, instant())
	resp := postJSON(t, context.Background(), url+"/v1/chat/completions", wireDialects[0].body, HeaderEncoding, "spaced+tabs")
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "tabs") || !strings.Contains(string(b), "pydefault") {
		t.Errorf("a bad X-Mock-Encoding: %d %s; want 400 naming the word and the valid ones", resp.StatusCode, b)
	}
	cfg, err := ParseScript([]byte("encoding: spaced+crlf\n"))
	if err != nil || cfg.Encoding != "spaced+crlf" {
		t.Errorf("script encoding: %q, %v", cfg.Encoding, err)
	}
	if _, err := ParseScript([]byte("encoding: tabs\n")); err == nil {
		t.Error("script encoding: tabs accepted")
	}
	cfg, _, _, err = parseFlags([]string{"--encoding", "pretty+noevent"}, io.Discard)
	if err != nil || cfg.Encoding != "pretty+noevent" {
		t.Errorf("--encoding: %q, %v", cfg.Encoding, err)
	}
	if _, _, _, err := parseFlags([]string{"--encoding", "tabs"}, io.Discard); err == nil || !strings.Contains(err.Error(), "tabs") {
		t.Errorf("--encoding tabs: %v", err)
	}
	// The Config's encoding is every call's, unless the header says
	// otherwise; the keepalive interval scales with the time scale.
	c := instant()
	c.Encoding = "spaced+keepalive"
	s, url := startMock(t, c.Scaled(0.05))
	_, raw, comments := streamOf(t, url, wireDialects[0], "", HeaderFail, "stall:2:160ms")
	if !strings.Contains(raw, `"object": "chat.completion.chunk"`) || comments < 2 {
		t.Errorf("Config.Encoding spaced+keepalive at time scale %v: %d comments:\n%s", s.TimeScale(), comments, raw)
	}
	_, raw, _ = streamOf(t, url, wireDialects[0], "compact")
	if strings.Contains(raw, `": "`) {
		t.Errorf("X-Mock-Encoding compact over a spaced Config:\n%s", raw)
	}
	// A script step's encoding is that of the calls the step hits.
	cfg, err = ParseScript([]byte("seed: 1\nttft: 0s\ntpot: 0s\nfailures:\n  - {kind: stall, after_tokens: 2, for: 120ms, encoding: 'pings:20ms+pydefault'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, url = startMock(t, cfg)
	m, raw, _ := streamOf(t, url, wireDialects[2], "")
	if m.Pings < 3 || !strings.Contains(raw, `"type": "ping"`) {
		t.Errorf("a stall step with encoding pings:20ms+pydefault: %d pings:\n%s", m.Pings, raw)
	}
	if _, err := ParseScript([]byte("failures:\n  - {kind: no_done, encoding: tabs}\n")); err == nil || !strings.Contains(err.Error(), "failures[0]") {
		t.Errorf("a step's bad encoding: %v", err)
	}
}
