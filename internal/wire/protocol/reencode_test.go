package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf16"
)

// reencode writes a recorded SSE stream (LF-framed, one JSON value or
// [DONE] per data line) again in a random legal way: the same events
// with the same meaning, in other bytes. It is the tests' own, so the
// invariance test depends on no other writer.
type reencoder struct {
	r *rand.Rand
	// One choice per stream.
	eol       string
	pretty    bool // JSON over several data: lines
	shuffle   bool // object keys in random order
	escapes   bool // \u escapes of letters, keys too, and \/
	spaced    bool // whitespace around ':' and ','
	noSpace   bool // "data:x" rather than "data: x" (some lines)
	comments  bool // comment events and comment lines
	idLines   bool // id: and retry: lines
	dropNames bool // no event: lines (where the type is in the data)
}

func newReencoder(seed uint64) *reencoder {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	e := &reencoder{r: r, eol: [...]string{"\n", "\r\n", "\r"}[r.IntN(3)]}
	e.pretty, e.shuffle, e.escapes, e.spaced = r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0
	e.noSpace, e.comments, e.idLines, e.dropNames = r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0
	return e
}

func (e *reencoder) String() string {
	return fmt.Sprintf("eol=%q pretty=%v shuffle=%v escapes=%v spaced=%v nospace=%v comments=%v id=%v dropnames=%v",
		e.eol, e.pretty, e.shuffle, e.escapes, e.spaced, e.noSpace, e.comments, e.idLines, e.dropNames)
}

// stream re-encodes a recorded stream; dropNames applies only where
// every event's data names its type (Anthropic, Responses).
func (e *reencoder) stream(rec string, typed bool) []byte {
	var b bytes.Buffer
	for _, ev := range strings.Split(strings.TrimSuffix(rec, "\n\n"), "\n\n") {
		if e.comments && e.r.IntN(3) == 0 {
			b.WriteString(": ping " + e.eol + e.eol)
		}
		for _, line := range strings.Split(ev, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				if !(e.dropNames && typed) {
					b.WriteString("event:" + e.space() + line[len("event: "):] + e.eol)
				}
			case strings.HasPrefix(line, "data: "):
				if e.idLines && e.r.IntN(2) == 0 {
					b.WriteString("id: 42" + e.eol)
				}
				e.data(&b, line[len("data: "):])
				if e.comments && e.r.IntN(4) == 0 {
					b.WriteString(":" + e.eol)
				}
				if e.idLines && e.r.IntN(4) == 0 {
					b.WriteString("retry: 3000" + e.eol)
				}
			default:
				b.WriteString(line + e.eol) // a comment
			}
		}
		b.WriteString(e.eol)
	}
	return b.Bytes()
}

func (e *reencoder) space() string {
	if e.noSpace && e.r.IntN(2) == 0 {
		return ""
	}
	return " "
}

func (e *reencoder) data(b *bytes.Buffer, data string) {
	if data == "[DONE]" {
		b.WriteString("data:" + e.space() + "[DONE]" + [...]string{"", " ", "\t"}[e.r.IntN(3)] + e.eol)
		return
	}
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	v, err := readNode(dec)
	if err != nil {
		panic(fmt.Sprintf("recorded data %q: %v", data, err))
	}
	var out strings.Builder
	e.node(&out, v, 0)
	for _, line := range strings.Split(out.String(), "\n") {
		b.WriteString("data:" + e.space() + line + e.eol)
	}
}

// node is a JSON value with its object keys in order.
type node struct {
	keys []string
	vals []node
	arr  []node
	str  *string
	lit  string // a number, true, false, null
	kind byte   // '{', '[', '"', or 0 for lit
}

func readNode(dec *json.Decoder) (node, error) {
	tok, err := dec.Token()
	if err != nil {
		return node{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := node{kind: byte(t)}
		for dec.More() {
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return n, err
				}
				n.keys = append(n.keys, k.(string))
			}
			v, err := readNode(dec)
			if err != nil {
				return n, err
			}
			if t == '{' {
				n.vals = append(n.vals, v)
			} else {
				n.arr = append(n.arr, v)
			}
		}
		_, err := dec.Token()
		return n, err
	case string:
		return node{kind: '"', str: &t}, nil
	case json.Number:
		return node{lit: string(t)}, nil
	case bool:
		return node{lit: fmt.Sprint(t)}, nil
	default:
		return node{lit: "null"}, nil
	}
}

// ws is whitespace between tokens: none, spaces or tabs, or in a pretty
// encoding a newline (a new data: line).
func (e *reencoder) ws(out *strings.Builder, depth int) {
	switch {
	case e.pretty && e.r.IntN(2) == 0:
		out.WriteString("\n" + strings.Repeat(" ", depth*2))
	case e.spaced:
		out.WriteString([...]string{"", " ", "  ", "\t", " \t "}[e.r.IntN(5)])
	}
}

func (e *reencoder) node(out *strings.Builder, n node, depth int) {
	switch n.kind {
	case '{':
		out.WriteByte('{')
		order := make([]int, len(n.keys))
		for i := range order {
			order[i] = i
		}
		if e.shuffle {
			e.r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		for j, i := range order {
			if j > 0 {
				e.ws(out, depth+1)
				out.WriteByte(',')
			}
			e.ws(out, depth+1)
			e.string(out, n.keys[i])
			e.ws(out, depth+1)
			out.WriteByte(':')
			e.ws(out, depth+1)
			e.node(out, n.vals[i], depth+1)
		}
		e.ws(out, depth)
		out.WriteByte('}')
	case '[':
		out.WriteByte('[')
		for i, v := range n.arr {
			if i > 0 {
				e.ws(out, depth+1)
				out.WriteByte(',')
			}
			e.ws(out, depth+1)
			e.node(out, v, depth+1)
		}
		e.ws(out, depth)
		out.WriteByte(']')
	case '"':
		e.string(out, *n.str)
	default:
		out.WriteString(n.lit)
	}
}

// string writes s as a JSON string, escaping at random what may be
// escaped, and always what must be.
func (e *reencoder) string(out *strings.Builder, s string) {
	out.WriteByte('"')
	esc := func(r rune) { fmt.Fprintf(out, [...]string{`\u%04x`, `\u%04X`}[e.r.IntN(2)], r) }
	for _, r := range s {
		maybe := e.escapes && e.r.IntN(2) == 0
		switch {
		case r == '"' || r == '\\':
			if maybe {
				esc(r)
			} else {
				out.WriteByte('\\')
				out.WriteRune(r)
			}
		case r == '\n' && !maybe:
			out.WriteString(`\n`)
		case r == '\t' && !maybe:
			out.WriteString(`\t`)
		case r < 0x20:
			esc(r)
		case r == '/' && maybe:
			out.WriteString(`\/`)
		case r > 0xffff && maybe:
			hi, lo := utf16.EncodeRune(r)
			esc(hi)
			esc(lo)
		case maybe:
			esc(r)
		default:
			out.WriteRune(r)
		}
	}
	out.WriteByte('"')
}
