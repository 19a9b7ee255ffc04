package sseenc

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode/utf8"
)

// node is one parsed JSON value. Numbers keep their literal, so 1e3
// stays 1e3; objects keep their keys' order.
type node struct {
	kind byte // '{', '[', '"', or 'v' for a number or literal (text)
	text string
	keys []string
	kids []node
}

// parseJSON reads exactly one JSON value; ok is false for anything else
// ([DONE], a cut event), which is then written as it came.
func parseJSON(data []byte) (n node, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil {
		return node{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return node{}, false
	}
	return n, true
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
					return node{}, err
				}
				n.keys = append(n.keys, k.(string))
			}
			kid, err := readNode(dec)
			if err != nil {
				return node{}, err
			}
			n.kids = append(n.kids, kid)
		}
		_, err := dec.Token() // the closing delimiter
		return n, err
	case string:
		return node{kind: '"', text: t}, nil
	case json.Number:
		return node{kind: 'v', text: t.String()}, nil
	case bool:
		if t {
			return node{kind: 'v', text: "true"}, nil
		}
		return node{kind: 'v', text: "false"}, nil
	}
	return node{kind: 'v', text: "null"}, nil
}

// jsonWriter writes a node in an Encoding's layout, order and escapes.
type jsonWriter struct {
	e   Encoding
	rnd *rand.Rand
	b   []byte
}

func (w *jsonWriter) value(n *node, depth int) {
	switch n.kind {
	case '"':
		w.str(n.text)
	case 'v':
		w.b = append(w.b, n.text...)
	case '[':
		if len(n.kids) == 0 {
			w.b = append(w.b, "[]"...)
			return
		}
		w.b = append(w.b, '[')
		for i := range n.kids {
			w.sep(i, depth+1)
			w.value(&n.kids[i], depth+1)
		}
		w.close(']', depth)
	case '{':
		if len(n.kids) == 0 {
			w.b = append(w.b, "{}"...)
			return
		}
		w.b = append(w.b, '{')
		for i, k := range w.order(n) {
			w.sep(i, depth+1)
			w.str(n.keys[k])
			w.b = append(w.b, ':')
			if w.e.layout != compact {
				w.b = append(w.b, ' ')
			}
			w.value(&n.kids[k], depth+1)
		}
		w.close('}', depth)
	}
}

// sep goes before the i-th item of a container at depth.
func (w *jsonWriter) sep(i, depth int) {
	if i > 0 {
		w.b = append(w.b, ',')
		if w.e.layout == spaced {
			w.b = append(w.b, ' ')
		}
	}
	if w.e.layout == pretty {
		w.indent(depth)
	}
}

func (w *jsonWriter) close(c byte, depth int) {
	if w.e.layout == pretty {
		w.indent(depth)
	}
	w.b = append(w.b, c)
}

func (w *jsonWriter) indent(depth int) {
	w.b = append(w.b, '\n')
	w.b = append(w.b, strings.Repeat("  ", depth)...)
}

// order is the order an object's members are written in. Sorting or
// shuffling first drops all but the last of a repeated key: a decoder
// keeps the last, and moving an earlier one after it would change the
// value.
func (w *jsonWriter) order(n *node) []int {
	idx := make([]int, 0, len(n.keys))
	if !w.e.sortKey && !w.e.shuffle {
		for i := range n.keys {
			idx = append(idx, i)
		}
		return idx
	}
	last := make(map[string]int, len(n.keys))
	for i, k := range n.keys {
		last[k] = i
	}
	for i, k := range n.keys {
		if last[k] == i {
			idx = append(idx, i)
		}
	}
	if w.e.sortKey {
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(n.keys[a], n.keys[b]) })
	} else {
		w.rnd.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	return idx
}

const hex = "0123456789abcdef"

// str writes s as a JSON string. Control characters are escaped as
// Python's json does (\n, \t and the like, else \u00XX); the rest is raw
// unless the encoding asks for escapes.
func (w *jsonWriter) str(s string) {
	w.b = append(w.b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			w.b = append(w.b, '\\', byte(r))
		case r == '\n':
			w.b = append(w.b, `\n`...)
		case r == '\r':
			w.b = append(w.b, `\r`...)
		case r == '\t':
			w.b = append(w.b, `\t`...)
		case r == '\b':
			w.b = append(w.b, `\b`...)
		case r == '\f':
			w.b = append(w.b, `\f`...)
		case r < 0x20:
			w.u(r)
		case r == '/' && w.e.slashes:
			w.b = append(w.b, `\/`...)
		case w.e.escaped && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'):
			w.u(r)
		case w.e.ascii && r >= 0x7f:
			if r > 0xffff {
				r -= 0x10000
				w.u(0xd800 + r>>10)
				w.u(0xdc00 + r&0x3ff)
			} else {
				w.u(r)
			}
		default:
			w.b = utf8.AppendRune(w.b, r)
		}
	}
	w.b = append(w.b, '"')
}

func (w *jsonWriter) u(r rune) {
	w.b = append(w.b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
