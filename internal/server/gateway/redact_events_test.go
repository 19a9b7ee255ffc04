package gateway

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// wireKey is a key with a '/', which a PHP or Java encoder writes as \/,
// and a '+'.
const wireKey = "sk-wire/TESTKEY+0123456789abcdef"

// streamOf is a stream of shape sh carrying answer a few characters an
// event (cut at random, at most most bytes an event), written in enc,
// with a comment line now and then between events and [DONE] last.
func streamOf(rng *rand.Rand, sh textShape, enc wireEnc, answer string, most int) []string {
	var events []string
	for _, p := range pieces(rng, answer, most) {
		events = append(events, enc.event(sh.event, sh.wrap(p)))
		if rng.IntN(10) == 0 {
			events = append(events, ": keepalive"+enc.eol+enc.eol)
		}
	}
	return append(events, "data: [DONE]"+enc.eol+enc.eol)
}

// The property: for random legal encodings of a stream (spaced, pretty
// multi-line data, any character \u-escaped, '/' as \/, escaped names,
// shuffled members, LF, CRLF or lone-CR framing, with and without the
// space after "data:") whose answer carries the key whole, split across
// events or not at all, and for any batching of its events, the text the
// client decodes is the answer with every byte of every key blanked but
// at most its first minHeld-1, every other byte as it was; and a stream
// without the key comes out byte for byte as it went in.
func TestEventScrubReadsEncodings(t *testing.T) {
	k := newKeyScrub(wireKey, "0123456789abcdef0123456789abcdef")
	rng := rand.New(rand.NewPCG(29, 10))
	words := []string{"the ", "key ", "is ", "sk-", "sk-wire", "s", wireKey[:9], "/", "+", "é", "😀", "\"", `\`, "\n", "<b>", "Bearer x", "*"}
	for trial := range 600 {
		sh := textShapes[trial%len(textShapes)]
		enc := randomEnc(rng)
		var a strings.Builder
		for range 3 + rng.IntN(12) {
			if rng.IntN(6) == 0 {
				a.WriteString(wireKey)
			} else {
				a.WriteString(words[rng.IntN(len(words))])
			}
		}
		answer := a.String()
		events := streamOf(rng, sh, enc, answer, 1+rng.IntN(10))
		in := strings.Join(events, "")
		out := scrubStream(rng, k, events)
		got, n := clientText(t, sh, out)
		_, want := clientText(t, sh, in)
		if n != want {
			t.Fatalf("trial %d (%s): %d events came out of %d", trial, sh.name, n, want)
		}
		if err := checkBlanked(got, answer, wireKey); err != nil {
			t.Fatalf("trial %d (%s, %+v): %v\n got %q\nfrom %q\nstream %q\nout %q", trial, sh.name, enc, err, got, answer, in, out)
		}
		if !strings.Contains(answer, wireKey) && out != in {
			t.Fatalf("trial %d (%s): a stream without the key changed:\n in %q\nout %q", trial, sh.name, in, out)
		}
	}
}

// One event at a time, the shapes providers write:
// each case's events go through as one batch and one at a time, and the
// client reads the key blanked in full (every case's key starts in an
// event of its own at least minHeld bytes long, or is whole).
func TestEventScrubEscapedForms(t *testing.T) {
	k := newKeyScrub(wireKey)
	chat := func(content string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + content + `"}}]}` + "\n\n"
	}
	spaced := func(content string) string {
		return `data: {"id": "c", "choices": [{"index": 0, "delta": {"content": "` + content + `"}}]}` + "\n\n"
	}
	ant := func(text string) string {
		return "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"" + text + "\"}}\n\n"
	}
	esc := func(s string) string { // every letter \u-escaped
		var b strings.Builder
		for _, r := range s {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				b.WriteString(`\u00` + strings.ToLower(string("0123456789abcdef"[r>>4])+string("0123456789abcdef"[r&15])))
			} else {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	slashed := strings.ReplaceAll(wireKey, "/", `\/`)
	cases := []struct {
		name   string
		events []string
		text   func(v map[string]any) (string, bool)
		event  string
		want   string
	}{
		{"slash escaped", []string{chat("key " + slashed + " ok")}, textShapes[0].read, "", "key " + stars(wireKey) + " ok"},
		{"letters \\u-escaped", []string{chat(esc(wireKey))}, textShapes[0].read, "", stars(wireKey)},
		{"one \\u0063 among plain", []string{chat(strings.Replace(wireKey, "T", `\u0054`, 1))}, textShapes[0].read, "", stars(wireKey)},
		{"escaped name", []string{`data: {"choices":[{"delta":{"c\u006fntent":"` + slashed + `"}}]}` + "\n\n"}, textShapes[0].read, "", stars(wireKey)},
		{"two events, compact", []string{chat("k: " + wireKey[:10]), chat(strings.ReplaceAll(wireKey[10:], "/", `\/`) + "!")}, textShapes[0].read, "", "k: " + stars(wireKey) + "!"},
		{"two events, spaced, escaped", []string{spaced(esc(wireKey[:6])), spaced(wireKey[6:])}, textShapes[0].read, "", stars(wireKey)},
		{"three events, spaced", []string{ant("x " + wireKey[:4]), ant(`\u0069` + wireKey[5:12]), ant(wireKey[12:] + " y")}, textShapes[2].read, "content_block_delta", "x " + stars(wireKey) + " y"},
		{"three events, compact, \\/ at the cut", []string{chat(wireKey[:7]), chat(`\/`), chat(wireKey[8:])}, textShapes[0].read, "", stars(wireKey)},
		{"tool-call arguments", []string{
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"k\": \"` + wireKey[:9] + `"}}]}}]}` + "\n\n",
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + esc(wireKey[9:]) + `\"}"}}]}}]}` + "\n\n",
		}, textShapes[1].read, "", `{"k": "` + stars(wireKey) + `"}`},
		{"CRLF framing", []string{strings.ReplaceAll(chat(wireKey[:5]), "\n", "\r\n"), strings.ReplaceAll(chat(slashed[5:]), "\n", "\r\n")}, textShapes[0].read, "", stars(wireKey)},
		{"lone-CR framing", []string{strings.ReplaceAll(chat("a "+wireKey[:5]), "\n", "\r") + strings.ReplaceAll(chat(slashed[5:]), "\n", "\r")}, textShapes[0].read, "", "a " + stars(wireKey)},
		{"multi-line data", []string{"data: {\"choices\": [\ndata:   {\"delta\": {\"content\":\ndata: \"" + slashed + "\"}}]}\n\n"}, textShapes[0].read, "", stars(wireKey)},
	}
	for _, c := range cases {
		for _, batch := range []bool{true, false} {
			var s eventScrub
			var out bytes.Buffer
			if batch {
				out.Write(s.events(k, []byte(strings.Join(c.events, ""))))
			} else {
				for _, e := range c.events {
					out.Write(s.events(k, []byte(e)))
				}
			}
			out.Write(s.flush())
			got, _ := clientText(t, textShape{read: c.text, event: c.event}, out.String())
			if got != c.want {
				t.Errorf("%s (batch %v): the client read %q, want %q\n%q", c.name, batch, got, c.want, out.String())
			}
		}
	}
}

func stars(s string) string { return strings.Repeat("*", len(s)) }

// A provider's error, mid-stream (OpenAI's error chunk) and as a body,
// that quotes the key escaped: the stream's is blanked by its meaning;
// the body (keyScrub.text) loses it, escapes and all.
func TestErrorMessageWithEscapedKey(t *testing.T) {
	k := newKeyScrub(wireKey)
	msg := `Incorrect API key provided: sk-wire\/TESTKEY\u002b0123456789abcdef.`
	var s eventScrub
	out := s.events(k, []byte(`data: {"error": {"message": "`+msg+`", "type": "invalid_request_error"}}`+"\n\n"))
	ev, _ := sseEvents(string(out))
	var v map[string]any
	if len(ev) != 1 || json.Unmarshal([]byte(ev[0]), &v) != nil {
		t.Fatalf("the event is no longer JSON: %q", out)
	}
	if m, _ := digString(v, "error", "message"); m != "Incorrect API key provided: "+stars(wireKey)+"." {
		t.Errorf("the client read %q", m)
	}
	body := k.text([]byte(`{"error":{"message":"` + msg + `"}}`))
	if want := `{"error":{"message":"Incorrect API key provided: [redacted]."}}`; string(body) != want {
		t.Errorf("error body %s, want %s", body, want)
	}
}

// keyScrub, which sees bytes without grammar (a whole answer, a part of
// an event too long to hold), reads escapes as it matches: it blanks an
// escaped key in place, every byte that spells it, and holds back an
// escape cut short at the end of a read.
func TestKeyScrubReadsEscapes(t *testing.T) {
	k := newKeyScrub(wireKey)
	for _, c := range []struct{ in, want string }{
		{`"sk-wire\/TESTKEY+0123456789abcdef"`, `"` + stars(`sk-wire\/TESTKEY+0123456789abcdef`) + `"`},
		{`"\u0073k-wire/TESTKEY\u002B0123456789abcdef!"`, `"` + stars(`\u0073k-wire/TESTKEY\u002B0123456789abcdef`) + `!"`},
		// An escaped backslash before "u0073...": the text is \u0073k...,
		// not the key.
		{`"\\u0073k-wire/TESTKEY+0123456789abcdef"`, `"\\u0073k-wire/TESTKEY+0123456789abcdef"`},
		{`"no key \/ here"`, `"no key \/ here"`},
	} {
		p := []byte(c.in)
		k.scrub(p)
		if string(p) != c.want {
			t.Errorf("scrub %s = %s, want %s", c.in, p, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		hold int
	}{
		{`text sk-wire\`, 8}, {`text sk-wire\/TE`, 11}, {`text \u00`, 4}, {`text \u0073k`, 7},
		{`text \\`, 0}, {`text`, 0}, {"text " + wireKey, 0}, {"text " + wireKey + "sk", 2},
	} {
		if got := k.partial([]byte(c.in)); got != c.hold {
			t.Errorf("partial(%q) = %d, want %d", c.in, got, c.hold)
		}
	}
}

// Events with nothing that could begin a key go on as they came, and a
// stream with no key in it costs no allocation an event, whether its
// events are read (text that ends in a key's first byte, escapes that
// could spell one) or not.
func TestEventScrubAllocs(t *testing.T) {
	k := newKeyScrub(wireKey)
	var b strings.Builder
	for i := range 20 {
		content := []string{"word ", "words", `a\nb`, `\u00e9t\u00e9`, "sk-not", `\/x`}[i%6]
		b.WriteString(`data: {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "` + content + `"}}]}` + "\r\n\r\n")
	}
	p := []byte(b.String())
	in := append([]byte(nil), p...)
	var s eventScrub
	out := s.events(k, p) // warm the buffers
	if allocs := testing.AllocsPerRun(200, func() { out = s.events(k, p) }); allocs != 0 {
		t.Errorf("%v allocations for 20 events", allocs)
	}
	out = append(out, s.flush()...)
	if !bytes.Equal(out, in) {
		t.Errorf("a stream without the key changed:\n%q\n%q", in, out)
	}
}

// FuzzEventScrub: whatever the answer, the encoding (seed) and the cut
// of the events, with the key put anywhere in the answer, the client
// reads the key blanked (all but at most its first minHeld-1 bytes) and
// every other byte as it was; and bytes that are not a stream at all
// pass without a panic, losing any key one event holds.
func FuzzEventScrub(f *testing.F) {
	f.Add("the key is  and more", uint64(1), uint8(11), []byte("data: {\"a\":\"sk-wire\\/TESTKEY+0123456789abcdef\"}\n\n"))
	f.Add("sk-sk-wire/TESTsk-", uint64(7), uint8(3), []byte("data: {\"a\":\r\ndata: \"\\u0073k-wire/TESTKEY+0123456789abcdef\"}\r\r"))
	f.Add("data: [DONE]\n\nevent: error", uint64(3), uint8(0), []byte("data: [\"\\ud800\\u"))
	f.Fuzz(func(t *testing.T, answer string, seed uint64, at uint8, raw []byte) {
		k := newKeyScrub(wireKey)
		answer = strings.ToValidUTF8(answer, "?")
		i := min(int(at), len(answer))
		for i > 0 && i < len(answer) && answer[i]&0xc0 == 0x80 {
			i--
		}
		answer = answer[:i] + wireKey + answer[i:]
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		sh := textShapes[int(seed%uint64(len(textShapes)))]
		events := streamOf(rng, sh, randomEnc(rng), answer, 1+int(seed%9))
		got, _ := clientText(t, sh, scrubStream(rng, k, events))
		if err := checkBlanked(got, answer, wireKey); err != nil {
			t.Fatalf("%v\n got %q\nfrom %q", err, got, answer)
		}

		var s eventScrub
		one := !bytes.Contains(raw, []byte("\n\n")) && !bytes.Contains(raw, []byte("\r")) && !bytes.Contains(raw, []byte("\n\n"))
		out := append([]byte(nil), s.events(k, append([]byte(nil), raw...))...)
		out = append(out, s.flush()...)
		if one && bytes.Contains(out, []byte(wireKey)) {
			t.Fatalf("the key came out of one event: %q -> %q", raw, out)
		}
	})
}

// What the scrub costs a stream of 20 events: plain text (passed
// unread), and text it must read (escapes, words ending as the key
// begins).
func BenchmarkEventScrub(b *testing.B) {
	k := newKeyScrub(wireKey)
	for _, c := range []struct{ name, content string }{{"plain", "word "}, {"read", `a\nbs`}} {
		p := []byte(strings.Repeat(`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`+c.content+`"}}]}`+"\n\n", 20))
		b.Run(c.name, func(b *testing.B) {
			var s eventScrub
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				s.events(k, p)
			}
		})
	}
}
