package tokens

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// This file is the reference the walker is checked against: the rules of
// Request's documentation, applied to the body as encoding/json decodes
// it, with every text counted by the tokenizer library's own Encode (not
// the Count the package calls), and no cache.

var refCodecs = sync.OnceValue(func() map[Encoding]tokenizer.Codec {
	m := map[Encoding]tokenizer.Codec{}
	for _, e := range []Encoding{O200kBase, Cl100kBase} {
		c, err := tokenizer.Get(tokenizer.Encoding(e))
		if err != nil {
			panic(err)
		}
		m[e] = c
	}
	return m
})

// refCount is the number of token ids Encode gives for s.
func refCount(enc Encoding, s string) int {
	ids, _, err := refCodecs()[enc].Encode(s)
	if err != nil {
		panic(err)
	}
	return len(ids)
}

type refWalker struct {
	enc       Encoding
	anthropic bool
}

// refRequest counts body by the documented rules. It assumes body is
// valid JSON without duplicate keys (a map keeps only the last).
func refRequest(enc Encoding, anthropic bool, body []byte) int {
	r := refWalker{enc, anthropic}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return 0 // not an object
	}
	n := 0
	for k, v := range top {
		switch {
		case k == "messages":
			if msgs, ok := asArray(v); ok {
				for _, m := range msgs {
					n += r.message(m, !anthropic)
				}
				if !anthropic {
					n += 3 // every reply is primed with 3 tokens
				}
			}
		case k == "system" && anthropic:
			n += r.content(v, false)
		case k == "tools", k == "functions":
			n += refCount(enc, string(v))
		case k == "prompt", k == "input":
			n += r.prompt(v)
		case k == "instructions" && !anthropic:
			if s, ok := asString(v); ok {
				n += refCount(enc, s)
			}
		}
	}
	return n
}

func (r refWalker) message(v json.RawMessage, framed bool) int {
	m, ok := asObject(v)
	if !ok {
		return 0
	}
	n := 0
	if framed {
		n += 3
	}
	for k, v := range m {
		switch {
		case k == "content":
			n += r.content(v, false)
		case r.anthropic:
		case v[0] == '"':
			s, _ := asString(v)
			n += refCount(r.enc, s)
			if k == "name" {
				n++
			}
		case v[0] == '{' || v[0] == '[':
			n += refCount(r.enc, string(v))
		}
	}
	return n
}

func (r refWalker) content(v json.RawMessage, inResult bool) int {
	if s, ok := asString(v); ok {
		return refCount(r.enc, s)
	}
	parts, ok := asArray(v)
	if !ok {
		return 0
	}
	n := 0
	for _, p := range parts {
		n += r.part(p, inResult)
	}
	return n
}

func (r refWalker) part(v json.RawMessage, inResult bool) int {
	m, ok := asObject(v)
	if !ok {
		return 0
	}
	typ, _ := asString(m["type"])
	text, _ := asString(m["text"])
	name, _ := asString(m["name"])
	switch typ {
	case "text", "input_text", "output_text":
		return refCount(r.enc, text)
	case "tool_use":
		return refCount(r.enc, name) + refCount(r.enc, string(m["input"]))
	case "tool_result":
		if c, ok := m["content"]; ok && !inResult {
			return r.content(c, true)
		}
	}
	return 0
}

func (r refWalker) prompt(v json.RawMessage) int {
	if s, ok := asString(v); ok {
		return refCount(r.enc, s)
	}
	items, ok := asArray(v)
	if !ok {
		return 0
	}
	n := 0
	for _, it := range items {
		switch c := it[0]; {
		case c == '"':
			s, _ := asString(it)
			n += refCount(r.enc, s)
		case c == '-' || c >= '0' && c <= '9':
			n++ // a token id
		case c == '[':
			ids, _ := asArray(it)
			for _, id := range ids {
				if c := id[0]; c == '-' || c >= '0' && c <= '9' {
					n++
				}
			}
		case c == '{':
			n += r.message(it, false)
		}
	}
	return n
}

func asString(v json.RawMessage) (string, bool) {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

func asArray(v json.RawMessage) ([]json.RawMessage, bool) {
	var a []json.RawMessage
	if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &a) != nil {
		return nil, false
	}
	return a, true
}

func asObject(v json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &m) != nil {
		return nil, false
	}
	return m, true
}

// duplicateKeys reports whether some object in the valid JSON body has a
// key twice (after unescaping), where the reference, which decodes into
// maps, sees only the last value and the walker sees both.
func duplicateKeys(body []byte) bool {
	type frame struct {
		obj     bool
		wantKey bool
		keys    map[string]bool
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var stack []*frame
	for {
		t, err := d.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			return true // not expected for a valid body: leave it alone
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if delim, ok := t.(json.Delim); ok && (delim == '}' || delim == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if s, ok := t.(string); ok && top != nil && top.obj && top.wantKey {
			if top.keys[s] {
				return true
			}
			top.keys[s] = true
			top.wantKey = false
			continue
		}
		// A value begins: its object, if any, wants a key after it.
		if top != nil && top.obj {
			top.wantKey = true
		}
		if delim, ok := t.(json.Delim); ok {
			stack = append(stack, &frame{obj: delim == '{', wantKey: delim == '{', keys: map[string]bool{}})
		}
	}
}
