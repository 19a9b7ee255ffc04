package translate

import (
	"bytes"
	"encoding/json"
	"strings"
)

// messagesToAnthropic writes the system prompt and the turns of an
// Anthropic request into b as it reads msgs, the messages array:
// `,"system":…` when there is one, then `,"messages":[…]`. It moves
// leading system and developer messages to the top-level system, turns
// tool messages into user turns of tool_result blocks, and merges
// consecutive turns of one role, since Anthropic requires user and
// assistant to alternate.
//
// No turn or block is built as a value: each block is written where it
// is read, so a body of many small blocks costs about its translated
// size. A block value for each, in slices grown by doubling, cost
// thirty-six times a body of one-character text blocks.
func (c *conv) messagesToAnthropic(msgs json.RawMessage, b *bytes.Buffer) error {
	system := run{b: b}
	system.open(`,"system":`)
	w := turnWriter{b: b}
	leading, systems := true, 0
	// begin ends the system prompt and opens the messages array, at the
	// first message that is not a leading system message.
	begin := func() {
		if leading {
			leading = false
			system.close(false)
			b.WriteString(`,"messages":[`)
		}
	}
	mo := &object{} // one for every message: nothing keeps it past its turn
	err := eachElement(msgs, "messages", func(i int, raw json.RawMessage) error {
		if err := mo.parseAt(raw, "messages", i); err != nil {
			return err
		}
		role, ok, err := getString(mo, "role")
		if err != nil {
			return err
		}
		if !ok {
			return invalid("messages.role", mo.at("role"), "is required")
		}
		switch role {
		case "system", "developer":
			if !leading {
				// Hoisting it would move an instruction the client placed
				// mid-conversation to before the conversation began.
				return c.refuse("messages.system", mo.loc(), "Anthropic has one system prompt, before the conversation; a "+role+" message after the first user or assistant message has no place")
			}
			if systems++; systems > 1 {
				system.join()
			}
			if err := c.textOnly(mo, "content", "system", &system, false); err != nil {
				return err
			}
			system.seal()
		case "user", "assistant":
			begin()
			r := w.turn(role)
			if text, ok := plainTurn(mo, role); ok {
				r.text(text, true)
			} else if role == "assistant" {
				err = c.assistantContent(mo, r)
			} else {
				err = c.userContent(mo, r)
			}
			if err != nil {
				return err
			}
			r.seal()
		case "tool":
			begin()
			r := w.turn("user")
			if err := c.toolResult(mo, r); err != nil {
				return err
			}
			r.seal()
		case "function":
			return c.refuse("messages.role", mo.at("role"), "the deprecated function role has no Anthropic equivalent; use tool messages")
		default:
			return invalid("messages.role", mo.at("role"), "unknown role "+quote(role))
		}
		return mo.refuseUnused(c, "Anthropic")
	})
	if err != nil {
		return err
	}
	begin()
	w.end()
	b.WriteByte(']')
	return nil
}

// run is one JSON value written as it is read: the one text of a turn
// (or system prompt) that came as a plain string and that nothing joined,
// written as that string; otherwise an array of blocks. Nothing is
// written before its first piece, the prefix included, so an empty run
// can be left out.
type run struct {
	b      *bytes.Buffer
	prefix string // written before the value
	// held is a text that came as a string, first in the run: written
	// as a string at close, or as the array's first block if another
	// piece joins it.
	held    string
	holding bool
	n       int  // blocks written
	fresh   bool // nothing is in the run, and the message that opened it is still being read
}

func (r *run) open(prefix string) { *r = run{b: r.b, prefix: prefix, fresh: true} }

// text adds a text block; fromStr says it came as a plain string, which
// stays a string while it is the run's only piece.
func (r *run) text(s string, fromStr bool) {
	if fromStr && r.fresh {
		r.held, r.holding, r.fresh = s, true, false
		return
	}
	r.next()
	writeTextBlock(r.b, s)
}

// block adds a block of any kind.
func (r *run) block(k *anBlock) error {
	r.next()
	return k.encode(r.b)
}

// join is a later message joining the run: a held string becomes the
// first block of an array, whether or not the message adds one.
func (r *run) join() {
	r.fresh = false
	if r.holding {
		r.b.WriteString(r.prefix)
		r.b.WriteByte('[')
		writeTextBlock(r.b, r.held)
		r.held, r.holding, r.n = "", false, 1
	}
}

// next starts a block: the array's start, or a comma.
func (r *run) next() {
	r.join()
	if r.n == 0 {
		r.b.WriteString(r.prefix)
		r.b.WriteByte('[')
	} else {
		r.b.WriteByte(',')
	}
	r.n++
}

// seal ends the message that opened the run: what later messages add
// to it are blocks, never a held string.
func (r *run) seal() { r.fresh = false }

// close writes the end of the value. An empty run is written as [] when
// always is set, else left out.
func (r *run) close(always bool) {
	switch {
	case r.holding:
		r.b.WriteString(r.prefix)
		writeString(r.b, r.held)
	case r.n > 0:
		r.b.WriteByte(']')
	case always:
		r.b.WriteString(r.prefix)
		r.b.WriteString("[]")
	}
}

// writeTextBlock writes a text block as anBlock.encode does.
func writeTextBlock(b *bytes.Buffer, s string) {
	b.WriteString(`{"type":"text","text":`)
	writeString(b, s)
	b.WriteByte('}')
}

// turnWriter writes the turns of the messages array, one open at a time.
type turnWriter struct {
	b       *bytes.Buffer
	role    string // the open turn's; "" when none is open
	content run
	turns   int
}

// turn is the content of role's turn: the open one if it is role's (the
// message joins it), else a new one.
func (w *turnWriter) turn(role string) *run {
	if w.role == role {
		w.content.join()
		return &w.content
	}
	w.end()
	if w.turns > 0 {
		w.b.WriteByte(',')
	}
	w.turns++
	w.b.WriteString(`{"role":`)
	writeString(w.b, role)
	w.b.WriteString(`,"content":`)
	w.role = role
	w.content = run{b: w.b}
	w.content.open("")
	return &w.content
}

// end closes the open turn, if any.
func (w *turnWriter) end() {
	if w.role != "" {
		w.content.close(true)
		w.b.WriteByte('}')
		w.role = ""
	}
}

// plainTurn is the text of a user or assistant message whose content is
// a string and which asks for nothing else that becomes a block (an
// assistant's tool calls; its empty text, which Anthropic refuses): the
// common turn, read without a block. It takes the keys the general path
// would take, so that what is left is refused alike.
func plainTurn(mo *object, role string) (string, bool) {
	v := mo.get("content")
	if v == nil || !isString(v) {
		return "", false
	}
	if role == "assistant" && mo.get("tool_calls") != nil {
		return "", false
	}
	s, ok := decodeString(v)
	if !ok || (role == "assistant" && s == "") {
		return "", false
	}
	return s, true
}

func textBlock(s string) anBlock { return anBlock{Type: "text", Text: &s} }

// textOnly writes a content that may hold text only, a string or text
// parts, into r; skipEmpty leaves out empty texts.
func (c *conv) textOnly(mo *object, key, what string, r *run, skipEmpty bool) error {
	v := mo.get(key)
	if v == nil {
		return nil
	}
	if isString(v) {
		s, ok := decodeString(v)
		if !ok {
			return invalid(ParamOf(mo.at(key)), mo.at(key), "must be a string or an array of parts")
		}
		if s != "" || !skipEmpty {
			r.text(s, true)
		}
		return nil
	}
	path := mo.at(key)
	po := &object{} // one for every part
	return eachElement(v, path, func(j int, raw json.RawMessage) error {
		if err := po.parseAt(raw, path, j); err != nil {
			return err
		}
		typ, _, err := getString(po, "type")
		if err != nil {
			return err
		}
		if typ != "text" {
			return c.refuse(ParamOf(po.loc())+"."+typ, po.loc(), "a "+what+" message can carry only text in Anthropic's API")
		}
		text, _, err := getString(po, "text")
		if err != nil {
			return err
		}
		if err := po.refuseUnused(c, "Anthropic"); err != nil {
			return err
		}
		if text != "" || !skipEmpty {
			r.text(text, false)
		}
		return nil
	})
}

func (c *conv) userContent(mo *object, r *run) error {
	v := mo.get("content")
	if v == nil || isString(v) {
		return c.textOnly(mo, "content", "user", r, false)
	}
	path := mo.at("content")
	po := &object{} // one for every part
	return eachElement(v, path, func(j int, raw json.RawMessage) error {
		if err := po.parseAt(raw, path, j); err != nil {
			return err
		}
		typ, _, err := getString(po, "type")
		if err != nil {
			return err
		}
		switch typ {
		case "text":
			text, _, err := getString(po, "text")
			if err != nil {
				return err
			}
			if err := po.refuseUnused(c, "Anthropic"); err != nil {
				return err
			}
			r.text(text, false)
			return nil
		case "image_url":
			img, ok, err := c.imageToAnthropic(po)
			if err != nil || !ok {
				return err
			}
			if err := po.refuseUnused(c, "Anthropic"); err != nil {
				return err
			}
			return r.block(&img)
		}
		return c.refuse("messages.content."+typ, po.loc(), "content of type "+quote(typ)+" has no Anthropic equivalent here")
	})
}

// imageToAnthropic turns an image_url part into an image block: a data:
// URL into a base64 source, an http(s) URL into a url source. ok is false
// when the part was dropped.
func (c *conv) imageToAnthropic(po *object) (b anBlock, ok bool, err error) {
	io, err := parseObject(po.get("image_url"), po.at("image_url"))
	if err != nil {
		return b, false, err
	}
	url, has, err := getString(io, "url")
	if err != nil {
		return b, false, err
	}
	if !has {
		return b, false, invalid("messages.content.image_url.url", io.at("url"), "is required")
	}
	if detail, _, err := getString(io, "detail"); err != nil {
		return b, false, err
	} else if detail != "" && detail != "auto" {
		if err := c.refuse("messages.content.image_url.detail", io.at("detail"), "Anthropic has no image detail level"); err != nil {
			return b, false, err
		}
	}
	if err := io.refuseUnused(c, "Anthropic"); err != nil {
		return b, false, err
	}
	switch {
	case strings.HasPrefix(url, "data:"):
		meta, data, found := strings.Cut(url[len("data:"):], ",")
		mediaType, isB64 := strings.CutSuffix(meta, ";base64")
		if !found || !isB64 || mediaType == "" {
			return b, false, invalid("messages.content.image_url.url", io.at("url"), "a data: URL must be data:<media type>;base64,<data>")
		}
		return anBlock{Type: "image", Source: &anSource{Type: "base64", MediaType: mediaType, Data: data}}, true, nil
	case strings.HasPrefix(url, "https://"), strings.HasPrefix(url, "http://"):
		return anBlock{Type: "image", Source: &anSource{Type: "url", URL: url}}, true, nil
	}
	return b, false, invalid("messages.content.image_url.url", io.at("url"), "must be a data: URL or an http(s) URL")
}

// assistantContent writes an assistant message's text, less empty texts
// (Anthropic refuses empty text blocks, and a turn that is all tool
// calls often comes with content ""), then its tool calls.
func (c *conv) assistantContent(mo *object, r *run) error {
	if err := c.textOnly(mo, "content", "assistant", r, true); err != nil {
		return err
	}
	calls := mo.get("tool_calls")
	if calls == nil {
		return nil
	}
	path := mo.at("tool_calls")
	co, fo := &object{}, &object{} // one each for every call
	return eachElement(calls, path, func(k int, raw json.RawMessage) error {
		if err := co.parseAt(raw, path, k); err != nil {
			return err
		}
		typ, _, err := getString(co, "type")
		if err != nil {
			return err
		}
		if typ != "function" {
			return c.refuse("messages.tool_calls.type", co.at("type"), "only function tool calls translate")
		}
		id, err := getRequired(co, "id", "messages.tool_calls.id")
		if err != nil {
			return err
		}
		if err := fo.parse(co.get("function"), co.at("function")); err != nil {
			return err
		}
		name, _, err := getString(fo, "name")
		if err != nil {
			return err
		}
		args, _, err := getString(fo, "arguments")
		if err != nil {
			return err
		}
		input, err := argumentsToInput(args, fo.at("arguments"))
		if err != nil {
			return err
		}
		if err := fo.refuseUnused(c, "Anthropic"); err != nil {
			return err
		}
		if err := co.refuseUnused(c, "Anthropic"); err != nil {
			return err
		}
		return r.block(&anBlock{Type: "tool_use", ID: id, Name: name, Input: input})
	})
}

// argumentsToInput parses OpenAI's arguments string into Anthropic's input
// object; empty arguments are an empty object.
func argumentsToInput(args, path string) (json.RawMessage, error) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}"), nil
	}
	raw := json.RawMessage(args)
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return nil, invalid(ParamOf(path), path, "must be a JSON object for Anthropic's tool_use input")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, invalid(ParamOf(path), path, "must be a JSON object for Anthropic's tool_use input")
	}
	return buf.Bytes(), nil
}

// toolResult writes a tool message as a tool_result block; its content
// is a string, an array of text blocks, or left out when empty.
func (c *conv) toolResult(mo *object, r *run) error {
	id, err := getRequired(mo, "tool_call_id", "messages.tool_call_id")
	if err != nil {
		return err
	}
	r.next()
	r.b.WriteString(`{"type":"tool_result","tool_use_id":`)
	writeString(r.b, id)
	content := run{b: r.b}
	content.open(`,"content":`)
	if err := c.textOnly(mo, "content", "tool", &content, false); err != nil {
		return err
	}
	content.close(false)
	r.b.WriteByte('}')
	return nil
}
