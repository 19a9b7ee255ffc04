package translate

import (
	"bytes"
	"encoding/json"
	"strings"
)

// messagesToAnthropic moves leading system and developer messages to the
// top-level system, turns tool messages into user turns of tool_result
// blocks, and merges consecutive turns of one role, since Anthropic
// requires user and assistant to alternate.
func (c *conv) messagesToAnthropic(msgs []json.RawMessage, out *anRequest) error {
	var system []anBlock
	// One turn per message at most: the array is sized once.
	out.Messages = make([]anMessage, 0, len(msgs))
	systemStr := true // every system message so far was a plain string
	leading := true
	mo := &object{} // one for every message: nothing keeps it past its turn
	for i, raw := range msgs {
		p := index("messages", i)
		if err := mo.parse(raw, p); err != nil {
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
				if err := c.refuse("messages.system", p, "Anthropic has one system prompt, before the conversation; a "+role+" message after the first user or assistant message has no place"); err != nil {
					return err
				}
				continue
			}
			blocks, fromStr, err := c.textOnly(mo, "content", "system")
			if err != nil {
				return err
			}
			systemStr = systemStr && fromStr
			system = append(system, blocks...)
		case "user", "assistant":
			leading = false
			if text, ok := plainTurn(mo, role); ok {
				appendText(out, role, text)
				break
			}
			if role == "assistant" {
				blocks, fromStr, err := c.assistantContent(mo)
				if err != nil {
					return err
				}
				appendTurn(out, "assistant", blocks, fromStr)
				break
			}
			blocks, fromStr, err := c.userContent(mo)
			if err != nil {
				return err
			}
			appendTurn(out, "user", blocks, fromStr)
		case "tool":
			leading = false
			block, err := c.toolResult(mo)
			if err != nil {
				return err
			}
			appendTurn(out, "user", []anBlock{block}, false)
		case "function":
			if err := c.refuse("messages.role", mo.at("role"), "the deprecated function role has no Anthropic equivalent; use tool messages"); err != nil {
				return err
			}
			continue
		default:
			return invalid("messages.role", mo.at("role"), "unknown role "+quote(role))
		}
		if err := mo.refuseUnused(c, "Anthropic"); err != nil {
			return err
		}
	}
	if len(system) == 0 {
		return nil
	}
	if systemStr && len(system) == 1 {
		out.System, _ = marshal(*system[0].Text)
		return nil
	}
	var err error
	out.System, err = marshal(system)
	return err
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

// appendText adds a plain string as a turn of role, or to the last turn
// if it has the same role.
func appendText(out *anRequest, role, text string) {
	if n := len(out.Messages); n == 0 || out.Messages[n-1].Role != role {
		out.Messages = append(out.Messages, anMessage{Role: role, IsStr: true, Text: text})
		return
	}
	appendTurn(out, role, []anBlock{textBlock(text)}, true)
}

// appendTurn adds blocks as a turn of role, or to the last turn if it has
// the same role.
func appendTurn(out *anRequest, role string, blocks []anBlock, fromStr bool) {
	if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
		last := &out.Messages[n-1]
		last.materialize()
		last.Blocks = append(last.Blocks, blocks...)
		last.FromStr = false
		return
	}
	out.Messages = append(out.Messages, anMessage{Role: role, Blocks: blocks, FromStr: fromStr})
}

func textBlock(s string) anBlock { return anBlock{Type: "text", Text: &s} }

// textOnly reads a content that may hold text only: a string, or text
// parts. fromStr reports a plain string.
func (c *conv) textOnly(mo *object, key, what string) (blocks []anBlock, fromStr bool, err error) {
	v := mo.get(key)
	if v == nil {
		return nil, false, nil
	}
	if isString(v) {
		s, ok := decodeString(v)
		if !ok {
			return nil, false, invalid(ParamOf(mo.at(key)), mo.at(key), "must be a string or an array of parts")
		}
		return []anBlock{textBlock(s)}, true, nil
	}
	parts, err := asArray(v, mo.at(key))
	if err != nil {
		return nil, false, err
	}
	for j, raw := range parts {
		po, err := parseObject(raw, index(mo.at(key), j))
		if err != nil {
			return nil, false, err
		}
		typ, _, err := getString(po, "type")
		if err != nil {
			return nil, false, err
		}
		if typ != "text" {
			if err := c.refuse(ParamOf(po.path)+"."+typ, po.path, "a "+what+" message can carry only text in Anthropic's API"); err != nil {
				return nil, false, err
			}
			continue
		}
		text, _, err := getString(po, "text")
		if err != nil {
			return nil, false, err
		}
		if err := po.refuseUnused(c, "Anthropic"); err != nil {
			return nil, false, err
		}
		blocks = append(blocks, textBlock(text))
	}
	return blocks, false, nil
}

func (c *conv) userContent(mo *object) ([]anBlock, bool, error) {
	v := mo.get("content")
	if v == nil || isString(v) {
		return c.textOnly(mo, "content", "user")
	}
	parts, err := asArray(v, mo.at("content"))
	if err != nil {
		return nil, false, err
	}
	var blocks []anBlock
	for j, raw := range parts {
		po, err := parseObject(raw, index(mo.at("content"), j))
		if err != nil {
			return nil, false, err
		}
		typ, _, err := getString(po, "type")
		if err != nil {
			return nil, false, err
		}
		var b anBlock
		switch typ {
		case "text":
			text, _, err := getString(po, "text")
			if err != nil {
				return nil, false, err
			}
			b = textBlock(text)
		case "image_url":
			img, ok, err := c.imageToAnthropic(po)
			if err != nil {
				return nil, false, err
			}
			if !ok {
				continue
			}
			b = img
		default:
			if err := c.refuse("messages.content."+typ, po.path, "content of type "+quote(typ)+" has no Anthropic equivalent here"); err != nil {
				return nil, false, err
			}
			continue
		}
		if err := po.refuseUnused(c, "Anthropic"); err != nil {
			return nil, false, err
		}
		blocks = append(blocks, b)
	}
	return blocks, false, nil
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

func (c *conv) assistantContent(mo *object) ([]anBlock, bool, error) {
	blocks, fromStr, err := c.textOnly(mo, "content", "assistant")
	if err != nil {
		return nil, false, err
	}
	// Anthropic refuses empty text blocks; an assistant turn that is all
	// tool calls often comes with content "".
	kept := blocks[:0]
	for _, b := range blocks {
		if *b.Text != "" {
			kept = append(kept, b)
		}
	}
	blocks = kept
	calls, err := getArray(mo, "tool_calls")
	if err != nil {
		return nil, false, err
	}
	for k, raw := range calls {
		co, err := parseObject(raw, index(mo.at("tool_calls"), k))
		if err != nil {
			return nil, false, err
		}
		typ, _, err := getString(co, "type")
		if err != nil {
			return nil, false, err
		}
		if typ != "function" {
			if err := c.refuse("messages.tool_calls.type", co.at("type"), "only function tool calls translate"); err != nil {
				return nil, false, err
			}
			continue
		}
		id, err := getRequired(co, "id", "messages.tool_calls.id")
		if err != nil {
			return nil, false, err
		}
		fo, err := parseObject(co.get("function"), co.at("function"))
		if err != nil {
			return nil, false, err
		}
		name, _, err := getString(fo, "name")
		if err != nil {
			return nil, false, err
		}
		args, _, err := getString(fo, "arguments")
		if err != nil {
			return nil, false, err
		}
		input, err := argumentsToInput(args, fo.at("arguments"))
		if err != nil {
			return nil, false, err
		}
		if err := fo.refuseUnused(c, "Anthropic"); err != nil {
			return nil, false, err
		}
		if err := co.refuseUnused(c, "Anthropic"); err != nil {
			return nil, false, err
		}
		blocks = append(blocks, anBlock{Type: "tool_use", ID: id, Name: name, Input: input})
		fromStr = false
	}
	return blocks, fromStr, nil
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

func (c *conv) toolResult(mo *object) (anBlock, error) {
	id, err := getRequired(mo, "tool_call_id", "messages.tool_call_id")
	if err != nil {
		return anBlock{}, err
	}
	blocks, fromStr, err := c.textOnly(mo, "content", "tool")
	if err != nil {
		return anBlock{}, err
	}
	b := anBlock{Type: "tool_result", ToolUseID: id}
	switch {
	case fromStr:
		b.Content, err = marshal(*blocks[0].Text)
	case len(blocks) > 0:
		b.Content, err = marshal(blocks)
	}
	return b, err
}
