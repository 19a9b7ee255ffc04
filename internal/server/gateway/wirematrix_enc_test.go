package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A stand-in for the SSE re-encoder (internal/wire/sseenc), with its
// call shape: parse an encoding's name, then write each event through
// it. It goes when that package lands; the matrix only needs these
// names to mean what the review's rows meant.

// wireEnc is one way of writing a stream: how the JSON is spelled, how
// the events are framed, and what the stream leaves out or adds.
type wireEnc struct {
	spaced, pretty, sortKeys, shuffle bool
	ascii, escapeAll, slashes         bool
	eol                               string
	noSpace, comments, idRetry        bool
	oaiEvent, noEventLines            bool

	// Stream-level: what the provider sends, not how it spells it.
	NoDone, NoPing, Pings, UsageAlways, UsageInline, Bytewise bool
	// Keepalive: comments are sent while the stream stalls.
	Keepalive bool

	n int // events written, for id: and the first event's retry:
}

func sseencParse(spec string) (*wireEnc, error) {
	e := &wireEnc{eol: "\n"}
	for p := range strings.SplitSeq(spec, "+") {
		switch p {
		case "compact":
		case "spaced":
			e.spaced = true
		case "pydefault":
			e.spaced, e.ascii = true, true
		case "starlette":
			e.spaced, e.ascii, e.eol = true, true, "\r\n"
		case "pretty":
			e.spaced, e.pretty = true, true
		case "sortkeys":
			e.sortKeys = true
		case "shuffle":
			e.shuffle = true
		case "escaped":
			e.escapeAll, e.ascii, e.slashes = true, true, true
		case "slashes":
			e.slashes = true
		case "crlf":
			e.eol = "\r\n"
		case "cr":
			e.eol = "\r"
		case "nospace":
			e.noSpace = true
		case "comments":
			e.comments, e.Keepalive = true, true
		case "pings":
			e.Pings = true
		case "idretry":
			e.idRetry = true
		case "oai-event":
			e.oaiEvent = true
		case "no-event-lines":
			e.noEventLines = true
		case "no-ping":
			e.NoPing = true
		case "no-done":
			e.NoDone = true
		case "usage-always":
			e.UsageAlways = true
		case "usage-inline":
			e.UsageInline = true
		case "bytewise":
			e.Bytewise = true
		default:
			return nil, fmt.Errorf("unknown encoding %q in %q", p, spec)
		}
	}
	return e, nil
}

func (e *wireEnc) field(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, ':')
	if !e.noSpace {
		dst = append(dst, ' ')
	}
	dst = append(dst, value...)
	return append(dst, e.eol...)
}

// AppendEvent writes one event: its event: line (name "" for none),
// its data (JSON re-spelled; anything else as it is) and the blank line.
func (e *wireEnc) AppendEvent(dst []byte, name string, data []byte, rnd *rand.Rand) []byte {
	if e.n == 0 && e.comments {
		dst = append(dst, ": OPENROUTER PROCESSING"...)
		dst = append(dst, e.eol+e.eol...)
	}
	if e.n == 0 && e.idRetry {
		dst = e.field(dst, "retry", "3000")
	}
	if e.comments && e.n%10 == 5 {
		dst = append(dst, ": keepalive"...)
		dst = append(dst, e.eol...)
	}
	if e.idRetry {
		dst = e.field(dst, "id", strconv.Itoa(e.n))
	}
	e.n++
	if name == "" && e.oaiEvent {
		name = "message"
	}
	if name != "" && !e.noEventLines {
		dst = e.field(dst, "event", name)
	}
	for _, line := range e.spell(data, rnd) {
		dst = e.field(dst, "data", line)
	}
	return append(dst, e.eol...)
}

// AppendComment writes a comment, as a keepalive.
func (e *wireEnc) AppendComment(dst []byte, text string) []byte {
	dst = append(dst, ':', ' ')
	dst = append(dst, text...)
	return append(dst, e.eol+e.eol...)
}

// jnode is a JSON value that keeps its objects' key order.
type jnode struct {
	kind  byte // '{', '[', '"', or 'v' for a number, true, false, null
	keys  []string
	vals  []jnode
	str   string
	plain string
}

func readJSON(d *json.Decoder) (jnode, error) {
	tok, err := d.Token()
	if err != nil {
		return jnode{}, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := jnode{kind: byte(v)}
		for d.More() {
			if v == '{' {
				k, err := d.Token()
				if err != nil {
					return n, err
				}
				n.keys = append(n.keys, k.(string))
			}
			c, err := readJSON(d)
			if err != nil {
				return n, err
			}
			n.vals = append(n.vals, c)
		}
		_, err := d.Token()
		return n, err
	case string:
		return jnode{kind: '"', str: v}, nil
	case json.Number:
		return jnode{kind: 'v', plain: v.String()}, nil
	case bool:
		return jnode{kind: 'v', plain: strconv.FormatBool(v)}, nil
	default:
		return jnode{kind: 'v', plain: "null"}, nil
	}
}

// spell re-spells data as this encoding writes JSON, as its lines.
func (e *wireEnc) spell(data []byte, rnd *rand.Rand) []string {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	n, err := readJSON(d)
	if err != nil || !json.Valid(data) {
		return []string{string(data)}
	}
	if _, err := d.Token(); err != io.EOF {
		return []string{string(data)}
	}
	var b strings.Builder
	e.write(&b, n, 0, rnd)
	return strings.Split(b.String(), "\n")
}

func (e *wireEnc) write(b *strings.Builder, n jnode, depth int, rnd *rand.Rand) {
	switch n.kind {
	case '"':
		e.quote(b, n.str)
		return
	case 'v':
		b.WriteString(n.plain)
		return
	}
	order := make([]int, len(n.vals))
	for i := range order {
		order[i] = i
	}
	if n.kind == '{' && e.sortKeys {
		slices.SortFunc(order, func(x, y int) int { return strings.Compare(n.keys[x], n.keys[y]) })
	}
	if n.kind == '{' && e.shuffle {
		rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	closer := byte('}')
	if n.kind == '[' {
		closer = ']'
	}
	b.WriteByte(n.kind)
	if len(order) == 0 {
		b.WriteByte(closer)
		return
	}
	for k, i := range order {
		if k > 0 {
			b.WriteByte(',')
			if e.spaced && !e.pretty {
				b.WriteByte(' ')
			}
		}
		if e.pretty {
			b.WriteString("\n" + strings.Repeat("  ", depth+1))
		}
		if n.kind == '{' {
			e.quoteKey(b, n.keys[i])
			b.WriteByte(':')
			if e.spaced {
				b.WriteByte(' ')
			}
		}
		e.write(b, n.vals[i], depth+1, rnd)
	}
	if e.pretty {
		b.WriteString("\n" + strings.Repeat("  ", depth))
	}
	b.WriteByte(closer)
}

// quoteKey writes a key: escaped letters are for the text, as the
// review's row had them.
func (e *wireEnc) quoteKey(b *strings.Builder, s string) {
	all := e.escapeAll
	e.escapeAll = false
	e.quote(b, s)
	e.escapeAll = all
}

func (e *wireEnc) quote(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		case r == '/' && e.slashes:
			b.WriteString(`\/`)
		case e.escapeAll && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
			fmt.Fprintf(b, `\u%04x`, r)
		case r >= utf8.RuneSelf && e.ascii:
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
