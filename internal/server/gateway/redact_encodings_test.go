package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// What a provider may legally write for the same stream, and what a
// client reads of it, for the scrubber's tests: one JSON value written in
// random legal ways (spacing, pretty lines, escapes of any character,
// escaped names), framed with any SSE line ending.

// jv is a JSON value to write: a string, a number (float64), an object
// (obj, names in order) or an array ([]any).
type obj []member

type member struct {
	name string
	v    any
}

// wireEnc is how one stream is written.
type wireEnc struct {
	rng     *rand.Rand
	spaced  bool   // ": " and ", "
	pretty  bool   // one member a line, which makes multi-line data
	escape  int    // out of 8: how often a character is \u-escaped
	slash   bool   // '/' written as \/
	names   bool   // names escaped too
	eol     string // "\n", "\r\n" or "\r"
	noSpace bool   // "data:" without the space
}

func randomEnc(rng *rand.Rand) wireEnc {
	return wireEnc{
		rng:     rng,
		spaced:  rng.IntN(2) == 0,
		pretty:  rng.IntN(4) == 0,
		escape:  []int{0, 0, 1, 3, 8}[rng.IntN(5)],
		slash:   rng.IntN(2) == 0,
		names:   rng.IntN(3) == 0,
		eol:     []string{"\n", "\r\n", "\r"}[rng.IntN(3)],
		noSpace: rng.IntN(4) == 0,
	}
}

// str writes s as a JSON string: escapes where JSON needs them, and
// others at random as the encoding says (\u for any character, a
// surrogate pair beyond the BMP).
func (w wireEnc) str(b *strings.Builder, s string, name bool) {
	b.WriteByte('"')
	for _, r := range s {
		esc := w.escape > 0 && (!name || w.names) && w.rng.IntN(8) < w.escape
		switch {
		case r == '"' || r == '\\':
			if esc {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteByte('\\')
				b.WriteRune(r)
			}
		case r == '/' && w.slash:
			b.WriteString(`\/`)
		case r == '\n' && !esc:
			b.WriteString(`\n`)
		case r < 0x20 || esc:
			if r > 0xffff {
				r1, r2 := surrogates(r)
				fmt.Fprintf(b, `\u%04X\u%04x`, r1, r2)
			} else if w.rng.IntN(2) == 0 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				fmt.Fprintf(b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

func surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + r>>10, 0xdc00 + r&0x3ff
}

func (w wireEnc) value(b *strings.Builder, v any, indent string) {
	colon, comma := ":", ","
	if w.spaced {
		colon, comma = ": ", ", "
	}
	switch v := v.(type) {
	case string:
		w.str(b, v, false)
	case float64:
		fmt.Fprint(b, v)
	case obj:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteString(strings.TrimRight(comma, " "))
				if !w.pretty && w.spaced {
					b.WriteByte(' ')
				}
			}
			if w.pretty {
				b.WriteString("\n" + indent + "  ")
			}
			w.str(b, m.name, true)
			b.WriteString(colon)
			w.value(b, m.v, indent+"  ")
		}
		if w.pretty && len(v) > 0 {
			b.WriteString("\n" + indent)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(comma)
			}
			w.value(b, e, indent)
		}
		b.WriteByte(']')
	default:
		panic(fmt.Sprintf("%T", v))
	}
}

// event writes one SSE event: an event line when name is set, then the
// data, a data line for each of its lines.
func (w wireEnc) event(name string, v any) string {
	var js strings.Builder
	w.value(&js, v, "")
	var b strings.Builder
	if name != "" {
		b.WriteString("event: " + name + w.eol)
	}
	for _, line := range strings.Split(js.String(), "\n") {
		if w.noSpace {
			b.WriteString("data:" + line + w.eol)
		} else {
			b.WriteString("data: " + line + w.eol)
		}
	}
	return b.String() + w.eol
}

// textShape is a stream whose answer is a run of one string, at one place
// in each event: what a model writes, a few characters an event.
type textShape struct {
	name  string
	event string // the SSE event line's name, if any
	wrap  func(piece string) obj
	read  func(v map[string]any) (string, bool)
}

func dig(v any, path ...any) (any, bool) {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[p]; !ok {
				return nil, false
			}
		case int:
			a, ok := v.([]any)
			if !ok || p >= len(a) {
				return nil, false
			}
			v = a[p]
		}
	}
	return v, true
}

func digString(v any, path ...any) (string, bool) {
	s, ok := dig(v, path...)
	if !ok {
		return "", false
	}
	t, ok := s.(string)
	return t, ok
}

var textShapes = []textShape{
	{name: "chat", wrap: func(p string) obj {
		return obj{{"id", "chatcmpl-1"}, {"object", "chat.completion.chunk"}, {"model", "gpt-x"},
			{"choices", []any{obj{{"index", 0.0}, {"delta", obj{{"content", p}}}}}}}
	}, read: func(v map[string]any) (string, bool) { return digString(v, "choices", 0, "delta", "content") }},
	{name: "tool arguments", wrap: func(p string) obj {
		return obj{{"id", "c"}, {"choices", []any{obj{{"index", 0.0}, {"delta", obj{{"tool_calls", []any{
			obj{{"index", 0.0}, {"function", obj{{"arguments", p}}}}}}}}}}}}
	}, read: func(v map[string]any) (string, bool) {
		return digString(v, "choices", 0, "delta", "tool_calls", 0, "function", "arguments")
	}},
	{name: "anthropic text", event: "content_block_delta", wrap: func(p string) obj {
		return obj{{"type", "content_block_delta"}, {"index", 0.0}, {"delta", obj{{"type", "text_delta"}, {"text", p}}}}
	}, read: func(v map[string]any) (string, bool) { return digString(v, "delta", "text") }},
	{name: "anthropic shuffled", event: "content_block_delta", wrap: func(p string) obj {
		return obj{{"delta", obj{{"text", p}, {"type", "text_delta"}}}, {"index", 0.0}, {"type", "content_block_delta"}}
	}, read: func(v map[string]any) (string, bool) { return digString(v, "delta", "text") }},
	{name: "responses", event: "response.output_text.delta", wrap: func(p string) obj {
		return obj{{"type", "response.output_text.delta"}, {"item_id", "msg_1"}, {"output_index", 0.0}, {"delta", p}}
	}, read: func(v map[string]any) (string, bool) { return digString(v, "delta") }},
}

// sseEvents splits a stream as a client does: events end at a blank
// line, lines at CR, LF or CRLF; an event's data is its data lines
// joined by "\n". Events with no data are left out.
func sseEvents(stream string) (events []string, names []string) {
	var data []string
	name, has := "", false
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(stream, "\r\n", "\n"), "\r", "\n"), "\n")
	for _, line := range lines {
		if line == "" {
			if has {
				events, names = append(events, strings.Join(data, "\n")), append(names, name)
			}
			data, name, has = nil, "", false
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data, has = append(data, value), true
		case "event":
			name = value
		}
	}
	return events, names
}

// clientText is the answer a client reads from a stream of shape sh:
// the text of each event, decoded, in order; and how many events.
func clientText(t *testing.T, sh textShape, stream string) (string, int) {
	t.Helper()
	events, names := sseEvents(stream)
	var text strings.Builder
	n := 0
	for i, data := range events {
		if data == "[DONE]" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("an event the client cannot read: %v\n%q", err, data)
		}
		piece, ok := sh.read(v)
		if !ok || names[i] != sh.event {
			t.Fatalf("an event lost its shape: %q (event %q)", data, names[i])
		}
		text.WriteString(piece)
		n++
	}
	return text.String(), n
}

// pieces cuts s into runs of 1 to max bytes, never inside a character.
func pieces(rng *rand.Rand, s string, most int) []string {
	var out []string
	for len(s) > 0 {
		n := min(1+rng.IntN(most), len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out, s = append(out, s[:n]), s[n:]
	}
	return out
}

// scrubStream runs stream through an eventScrub, the events batched at
// random (whole events, as the relay frames them), and returns what the
// client gets.
func scrubStream(rng *rand.Rand, k *keyScrub, events []string) string {
	var s eventScrub
	var out bytes.Buffer
	for i := 0; i < len(events); {
		n := min(1+rng.IntN(3), len(events)-i)
		out.Write(s.events(k, []byte(strings.Join(events[i:i+n], ""))))
		i += n
	}
	out.Write(s.flush())
	return out.String()
}

// checkBlanked says whether got, the client's text, is want with every
// byte of every occurrence of key blanked, but at most the first
// minHeld-1 of each (a start too short to hold an event for), which may
// show; every other byte as it was.
func checkBlanked(got, want, key string) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	// 2: in the body of an occurrence; 1: only in its first minHeld-1
	// bytes.
	in := make([]int, len(want))
	for i := 0; ; {
		j := strings.Index(want[i:], key)
		if j < 0 {
			break
		}
		for q := i + j; q < i+j+len(key); q++ {
			if q < i+j+minHeld-1 {
				in[q] = max(in[q], 1)
			} else {
				in[q] = 2
			}
		}
		i += j + 1
	}
	for i := range want {
		switch {
		case in[i] == 2 && got[i] != '*',
			in[i] == 1 && got[i] != '*' && got[i] != want[i],
			in[i] == 0 && got[i] != want[i]:
			return fmt.Errorf("byte %d is %q", i, got[i])
		}
	}
	return nil
}
