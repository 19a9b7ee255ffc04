package answer

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Anthropic's Messages: a stream of named events (message_start, a
// content_block_start, _delta(s) and _stop per block, message_delta
// with the stop reason and the usage, message_stop); the whole answer a
// message.

// maxBlocks bounds the content blocks a collector keeps apart.
const maxBlocks = 4096

// anBlock is one content block as its events build it.
type anBlock struct {
	start   object // the content_block of its start event
	kind    string
	text    []byte // text_delta, thinking_delta
	json    []byte // input_json_delta
	sig     []byte // signature_delta
	deltas  bool
	stopped bool
}

// deltaOf is the delta type that extends a block of each kind, and the
// member it extends.
var deltaOf = map[string]struct{ delta, member string }{
	"text":            {"text_delta", "text"},
	"thinking":        {"thinking_delta", "thinking"},
	"tool_use":        {"input_json_delta", "input"},
	"server_tool_use": {"input_json_delta", "input"},
}

// anCollect collects a Messages stream, one event at a time.
type anCollect struct {
	msg, usage    object
	blocks        []*anBlock
	stop          object // message_delta's delta
	started, done bool
}

func (c *anCollect) event(ev translate.Event) error {
	if c.done {
		return shape("an event after message_stop")
	}
	e, err := readObject(ev.Data)
	if err != nil {
		return err
	}
	typ, _ := str(e.get("type"))
	if ev.Name != "" && ev.Name != typ {
		return shape("an event named %q of type %q", ev.Name, typ)
	}
	if typ != "message_start" && typ != "ping" && typ != "error" && !c.started {
		return shape("%s before message_start", typ)
	}
	switch typ {
	case "ping":
	case "error":
		return ErrFailed
	case "message_start":
		if c.started {
			return shape("a second message_start")
		}
		c.started = true
		if c.msg, err = readObject(e.get("message")); err != nil {
			return err
		}
		if u := c.msg.get("usage"); !isNull(u) {
			if c.usage, err = readObject(u); err != nil {
				return err
			}
		}
	case "content_block_start":
		i, ok := integer(e.get("index"))
		if !ok || i != int64(len(c.blocks)) || i >= maxBlocks {
			return shape("a block started out of order")
		}
		cb, err := readObject(e.get("content_block"))
		if err != nil {
			return err
		}
		kind, _ := str(cb.get("type"))
		c.blocks = append(c.blocks, &anBlock{start: cb, kind: kind})
	case "content_block_delta":
		b, err := blockAt(c.blocks, e)
		if err != nil {
			return err
		}
		return b.addDelta(e.get("delta"))
	case "content_block_stop":
		b, err := blockAt(c.blocks, e)
		if err != nil {
			return err
		}
		b.stopped = true
	case "message_delta":
		if d := e.get("delta"); !isNull(d) {
			if c.stop, err = readObject(d); err != nil {
				return err
			}
		}
		if u := e.get("usage"); !isNull(u) {
			// Cumulative: each count it has replaces the start's.
			more, err := readObject(u)
			if err != nil {
				return err
			}
			for _, f := range more {
				if !isNull(f.value) {
					c.usage = c.usage.set(f.name, f.value)
				}
			}
		}
	case "message_stop":
		c.done = true
	default:
		return shape("an event of type %q", typ)
	}
	return nil
}

// held is about how many bytes the collection holds.
func (c *anCollect) held() int {
	n := 0
	for _, f := range c.msg {
		n += len(f.value)
	}
	for _, b := range c.blocks {
		n += len(b.text) + len(b.json) + len(b.sig)
		for _, f := range b.start {
			n += len(f.value)
		}
	}
	return n
}

func (c *anCollect) whole() ([]byte, error) {
	if !c.done || c.stop == nil {
		return nil, ErrIncomplete
	}
	cb := []byte{'['}
	for i, b := range c.blocks {
		if !b.stopped {
			return nil, ErrIncomplete
		}
		whole, err := b.whole()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			cb = append(cb, ',')
		}
		cb = append(cb, whole...)
	}
	msg := append(object(nil), c.msg...).set("content", append(cb, ']'))
	for _, name := range []string{"stop_reason", "stop_sequence"} {
		if v := c.stop.get(name); len(v) > 0 {
			msg = msg.set(name, v)
		}
	}
	if c.usage != nil {
		msg = msg.set("usage", c.usage.bytes())
	}
	return msg.bytes(), nil
}

func blockAt(blocks []*anBlock, e object) (*anBlock, error) {
	i, ok := integer(e.get("index"))
	if !ok || i < 0 || i >= int64(len(blocks)) || blocks[i].stopped {
		return nil, shape("an event for a block not open")
	}
	return blocks[i], nil
}

func (b *anBlock) addDelta(raw jsontext.Value) error {
	d, err := readObject(raw)
	if err != nil {
		return err
	}
	typ, _ := str(d.get("type"))
	want, known := deltaOf[b.kind]
	var member string
	var to *[]byte
	switch {
	case typ == "signature_delta" && b.kind == "thinking":
		member, to = "signature", &b.sig
	case known && typ == want.delta:
		member, to = "text", &b.text
		switch typ {
		case "input_json_delta":
			member, to = "partial_json", &b.json
		case "thinking_delta":
			member = "thinking"
		}
	default:
		return shape("a %q delta on a %q block", typ, b.kind)
	}
	if bad := d.only("type", member); bad != "" {
		return shape("a delta's %q", bad)
	}
	s, ok := str(d.get(member))
	if !ok {
		return shape("a delta's %s", member)
	}
	*to = append(*to, s...)
	b.deltas = true
	return nil
}

// whole is the block as a whole message has it.
func (b *anBlock) whole() ([]byte, error) {
	o := append(object(nil), b.start...)
	switch b.kind {
	case "text":
		o = o.set("text", quoteBytes(append(textOf(o.get("text")), b.text...)))
	case "thinking":
		o = o.set("thinking", quoteBytes(append(textOf(o.get("thinking")), b.text...)))
		if len(b.sig) > 0 {
			o = o.set("signature", quoteBytes(b.sig))
		}
	case "tool_use", "server_tool_use":
		if len(b.json) > 0 {
			v := jsontext.Value(b.json)
			if !v.IsValid() {
				return nil, shape("a tool's input is not JSON")
			}
			if err := v.Compact(); err != nil {
				return nil, shape("a tool's input: %v", err)
			}
			o = o.set("input", v)
		}
	default:
		if b.deltas {
			return nil, shape("deltas on a %q block", b.kind)
		}
	}
	return o.bytes(), nil
}

func textOf(v jsontext.Value) []byte {
	s, _ := str(v)
	return []byte(s)
}

// streamAnthropic writes a whole message as its stream: message_start
// (the message without its content, stop reason or output count), each
// block's start, its one delta (text, thinking and its signature, a
// tool's input as one input_json_delta) and its stop, message_delta with
// the stop reason and the whole usage, message_stop.
func streamAnthropic(body []byte) ([]byte, error) {
	m, err := readObject(body)
	if err != nil {
		return nil, err
	}
	if _, ok := str(m.get("stop_reason")); !ok {
		return nil, ErrIncomplete
	}
	content, err := elements(m.get("content"))
	if err != nil {
		return nil, err
	}
	var out []byte
	emit := func(typ string, o object) {
		o = append(object{{"type", quote(typ)}}, o...)
		out = translate.AppendEvent(out, translate.Event{Name: typ, Data: o.bytes()})
	}
	var head object
	for _, f := range m {
		switch f.name {
		case "content":
			head = append(head, field{"content", []byte("[]")})
		case "stop_reason", "stop_sequence":
			head = append(head, field{f.name, null})
		case "usage":
			u, err := readObject(f.value)
			if err != nil {
				return nil, err
			}
			// The start's output count is a placeholder, as Anthropic's
			// own is; message_delta carries the real one.
			if len(u.get("output_tokens")) > 0 {
				u = append(object(nil), u...).set("output_tokens", []byte("1"))
			}
			head = append(head, field{"usage", u.bytes()})
		default:
			head = append(head, f)
		}
	}
	emit("message_start", object{{"message", head.bytes()}})
	for i, raw := range content {
		blk, err := readObject(raw)
		if err != nil {
			return nil, err
		}
		idx := []byte(strconv.Itoa(i))
		kind, _ := str(blk.get("type"))
		start := append(object(nil), blk...)
		var deltas []object
		switch kind {
		case "text":
			if bad := blk.only("type", "text"); bad != "" {
				return nil, shape("a text block's %q", bad)
			}
			start = start.set("text", quote(""))
			if s, _ := str(blk.get("text")); s != "" {
				deltas = append(deltas, object{{"type", quote("text_delta")}, {"text", blk.get("text")}})
			}
		case "thinking":
			if bad := blk.only("type", "thinking", "signature"); bad != "" {
				return nil, shape("a thinking block's %q", bad)
			}
			start = start.set("thinking", quote("")).set("signature", quote(""))
			deltas = append(deltas, object{{"type", quote("thinking_delta")}, {"thinking", blk.get("thinking")}})
			if s, _ := str(blk.get("signature")); s != "" {
				deltas = append(deltas, object{{"type", quote("signature_delta")}, {"signature", blk.get("signature")}})
			}
		case "tool_use", "server_tool_use":
			input := blk.get("input")
			if isNull(input) {
				input = []byte("{}")
			}
			start = start.set("input", []byte("{}"))
			deltas = append(deltas, object{{"type", quote("input_json_delta")}, {"partial_json", quoteBytes(input)}})
		}
		emit("content_block_start", object{{"index", idx}, {"content_block", start.bytes()}})
		for _, d := range deltas {
			emit("content_block_delta", object{{"index", idx}, {"delta", d.bytes()}})
		}
		emit("content_block_stop", object{{"index", idx}})
	}
	delta := object{{"stop_reason", m.get("stop_reason")}}
	if v := m.get("stop_sequence"); len(v) > 0 {
		delta = append(delta, field{"stop_sequence", v})
	}
	md := object{{"delta", delta.bytes()}}
	if u := m.get("usage"); !isNull(u) {
		md = append(md, field{"usage", u})
	}
	emit("message_delta", md)
	emit("message_stop", nil)
	return out, nil
}
