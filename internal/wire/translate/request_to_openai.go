package translate

import (
	"bytes"
	"encoding/json"
	"slices"
)

// RequestToOpenAI translates an Anthropic /v1/messages body into an
// OpenAI /v1/chat/completions body, failing like RequestToAnthropic. A
// streamed request asks for stream_options.include_usage, since an
// Anthropic client expects usage at the end of every stream.
func RequestToOpenAI(body []byte, opts Options) (*Translated, error) {
	c := &conv{opts: opts, Bender: NewBender(opts)}
	o, model, err := parseRequest(body)
	if err != nil {
		return nil, err
	}
	out := oaRequest{Model: model}

	mt, ok, err := getInt(o, "max_tokens")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, invalid("max_tokens", "max_tokens", "is required")
	}
	if opts.LegacyMaxTokens {
		out.MaxTokens = &mt
	} else {
		out.MaxCompletionTokens = &mt
	}
	if _, out.Temperature, err = getNumber(o, "temperature"); err != nil {
		return nil, err
	}
	if _, out.TopP, err = getNumber(o, "top_p"); err != nil {
		return nil, err
	}
	if v := o.get("stop_sequences"); v != nil {
		if err := json.Unmarshal(v, &out.Stop); err != nil {
			return nil, invalid("stop_sequences", "stop_sequences", "must be an array of strings")
		}
	}
	if err := c.anthropicDefaultsOnly(o); err != nil {
		return nil, err
	}
	res := &Translated{}
	if res.Stream, _, err = getBool(o, "stream"); err != nil {
		return nil, err
	}
	if res.Stream {
		out.Stream = true
		out.StreamOptions = &oaStreamOptions{IncludeUsage: true}
	}
	if md := o.get("metadata"); md != nil {
		mo, err := parseObject(md, "metadata")
		if err != nil {
			return nil, err
		}
		if out.User, _, err = getString(mo, "user_id"); err != nil {
			return nil, err
		}
		if err := mo.refuseUnused(c, "OpenAI"); err != nil {
			return nil, err
		}
	}
	if err := c.toolsToOpenAI(o, &out); err != nil {
		return nil, err
	}
	if err := c.outputConfigToOpenAI(o, &out); err != nil {
		return nil, err
	}
	if err := c.thinkingToOpenAI(o, &out); err != nil {
		return nil, err
	}
	if err := c.systemToOpenAI(o, &out); err != nil {
		return nil, err
	}
	msgs := o.get("messages")
	if msgs == nil {
		return nil, invalid("messages", "messages", "is required")
	}
	if isArray(msgs) {
		// A message each, most often: sized once, not by doubling.
		out.Messages = slices.Grow(out.Messages, elementCount(bytes.TrimSpace(msgs)))
	}
	mo, bo := &object{}, &object{} // one each for every message and block
	if err := eachElement(msgs, "messages", func(i int, raw json.RawMessage) error {
		return c.messageToOpenAI(mo, bo, raw, i, &out)
	}); err != nil {
		return nil, err
	}
	if out.Messages == nil {
		out.Messages = []oaMessage{}
	}
	if err := o.refuseUnused(c, "OpenAI"); err != nil {
		return nil, err
	}
	if res.Body, err = marshal(out); err != nil {
		return nil, err
	}
	res.Dropped = c.Dropped()
	return res, nil
}

func (c *conv) anthropicDefaultsOnly(o *object) error {
	checks := []struct {
		key       string
		isDefault func(json.RawMessage) bool
		why       string
	}{
		{"top_k", never, "OpenAI has no top_k"},
		{"service_tier", isJSON(`"auto"`), "Anthropic's service tiers do not map to OpenAI's"},
	}
	for _, ck := range checks {
		v := o.get(ck.key)
		if v == nil || ck.isDefault(v) {
			continue
		}
		if err := c.refuse(ck.key, ck.key, ck.why); err != nil {
			return err
		}
	}
	return nil
}

func (c *conv) systemToOpenAI(o *object, out *oaRequest) error {
	v := o.get("system")
	if v == nil {
		return nil
	}
	if isString(v) {
		out.Messages = append(out.Messages, oaMessage{Role: "system", Content: v})
		return nil
	}
	blocks, err := asArray(v, "system")
	if err != nil {
		return err
	}
	var parts []oaPart
	for j, raw := range blocks {
		bo, err := parseObject(raw, index("system", j))
		if err != nil {
			return err
		}
		typ, _, err := getString(bo, "type")
		if err != nil {
			return err
		}
		if typ != "text" {
			if err := c.refuse("system."+typ, bo.loc(), "a system prompt can carry only text"); err != nil {
				return err
			}
			continue
		}
		text, _, err := getString(bo, "text")
		if err != nil {
			return err
		}
		if err := bo.refuseUnused(c, "OpenAI"); err != nil {
			return err
		}
		parts = append(parts, oaPart{Type: "text", Text: &text})
	}
	if len(parts) == 0 {
		return nil
	}
	content, err := marshal(parts)
	if err != nil {
		return err
	}
	out.Messages = append(out.Messages, oaMessage{Role: "system", Content: content})
	return nil
}

func (c *conv) toolsToOpenAI(o *object, out *oaRequest) error {
	if tools := o.get("tools"); tools != nil {
		if isArray(tools) {
			out.Tools = make([]oaTool, 0, elementCount(bytes.TrimSpace(tools)))
		}
		if err := c.eachToolToOpenAI(tools, out); err != nil {
			return err
		}
	}
	return c.toolChoiceToOpenAI(o, out)
}

// eachToolToOpenAI adds each custom tool of tools to out.Tools.
func (c *conv) eachToolToOpenAI(tools json.RawMessage, out *oaRequest) error {
	to := &object{} // one for every tool
	return eachElement(tools, "tools", func(i int, raw json.RawMessage) error {
		if err := to.parseAt(raw, "tools", i); err != nil {
			return err
		}
		typ, _, err := getString(to, "type")
		if err != nil {
			return err
		}
		if typ != "" && typ != "custom" {
			// Anthropic's server tools (web search, code execution, ...)
			// run at Anthropic; an OpenAI upstream cannot run them.
			return c.refuse("tools.type", to.at("type"), quote(typ)+" is an Anthropic server tool with no OpenAI equivalent")
		}
		var f oaFunctionDef
		if f.Name, err = getRequired(to, "name", "tools.name"); err != nil {
			return err
		}
		if f.Description, _, err = getString(to, "description"); err != nil {
			return err
		}
		if f.Strict, _, err = getBool(to, "strict"); err != nil {
			return err
		}
		if f.Parameters = to.get("input_schema"); f.Parameters == nil {
			return invalid("tools.input_schema", to.at("input_schema"), "is required")
		}
		if err := to.refuseUnused(c, "OpenAI"); err != nil {
			return err
		}
		out.Tools = append(out.Tools, oaTool{Type: "function", Function: f})
		return nil
	})
}

// toolChoiceToOpenAI translates tool_choice.
func (c *conv) toolChoiceToOpenAI(o *object, out *oaRequest) error {
	raw := o.get("tool_choice")
	if raw == nil {
		return nil
	}
	tc, err := parseObject(raw, "tool_choice")
	if err != nil {
		return err
	}
	typ, _, err := getString(tc, "type")
	if err != nil {
		return err
	}
	switch typ {
	case "auto":
		out.ToolChoice = "auto"
	case "any":
		out.ToolChoice = "required"
	case "none":
		out.ToolChoice = "none"
	case "tool":
		name, err := getRequired(tc, "name", "tool_choice.name")
		if err != nil {
			return err
		}
		var named oaNamedToolChoice
		named.Type = "function"
		named.Function.Name = name
		out.ToolChoice = named
	default:
		return invalid("tool_choice.type", "tool_choice.type", "must be auto, any, none or tool")
	}
	if disable, _, err := getBool(tc, "disable_parallel_tool_use"); err != nil {
		return err
	} else if disable && len(out.Tools) > 0 && typ != "none" {
		out.ParallelToolCalls = ptr(false)
	}
	return tc.refuseUnused(c, "OpenAI")
}

// messageToOpenAI appends one Anthropic turn: a user turn's tool_result
// blocks become tool messages, ahead of a user message with the rest (as
// Anthropic has them first); an assistant turn's tool_use blocks become
// its tool_calls.
//
// mo and bo are the objects it reads the message and its blocks into,
// reused from message to message.
func (c *conv) messageToOpenAI(mo, bo *object, raw json.RawMessage, i int, out *oaRequest) error {
	if err := mo.parseAt(raw, "messages", i); err != nil {
		return err
	}
	role, _, err := getString(mo, "role")
	if err != nil {
		return err
	}
	if role != "user" && role != "assistant" {
		return invalid("messages.role", mo.at("role"), "must be user or assistant")
	}
	content := mo.get("content")
	if content == nil {
		return invalid("messages.content", mo.at("content"), "is required")
	}
	if err := mo.refuseUnused(c, "OpenAI"); err != nil {
		return err
	}
	if isString(content) {
		out.Messages = append(out.Messages, oaMessage{Role: role, Content: content})
		return nil
	}
	path := mo.at("content")
	if !isArray(content) {
		return invalid(ParamOf(path), path, "must be an array")
	}
	msg := oaMessage{Role: role}
	// The parts and the calls are sized at their first, for the blocks
	// left: not by doubling, and not at all for a turn without any.
	n := elementCount(bytes.TrimSpace(content))
	parts := []oaPart{}
	toolResults := 0
	addPart := func(j int, p oaPart) {
		if cap(parts) == 0 {
			parts = make([]oaPart, 0, n-j)
		}
		parts = append(parts, p)
	}
	err = eachElement(content, path, func(j int, braw json.RawMessage) error {
		if err := bo.parseAt(braw, path, j); err != nil {
			return err
		}
		typ, _, err := getString(bo, "type")
		if err != nil {
			return err
		}
		switch {
		case typ == "text":
			text, _, err := getString(bo, "text")
			if err != nil {
				return err
			}
			addPart(j, oaPart{Type: "text", Text: &text})
		case typ == "image" && role == "user":
			url, ok, err := c.imageToOpenAI(bo)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			addPart(j, oaPart{Type: "image_url", ImageURL: &oaImageURL{URL: url}})
		case typ == "tool_result" && role == "user":
			tm, ok, err := c.toolResultToOpenAI(bo)
			if err != nil {
				return err
			}
			if ok {
				out.Messages = append(out.Messages, tm)
				toolResults++
			}
		case typ == "tool_use" && role == "assistant":
			call, err := toolUseToOpenAI(bo)
			if err != nil {
				return err
			}
			if msg.ToolCalls == nil {
				msg.ToolCalls = make([]oaToolCall, 0, n-j)
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		default:
			if err := c.refuse("messages.content."+typ, bo.loc(), "a "+role+" "+quote(typ)+" block has no OpenAI equivalent"); err != nil {
				return err
			}
			return nil
		}
		return bo.refuseUnused(c, "OpenAI")
	})
	if err != nil {
		return err
	}
	if role == "user" && len(parts) == 0 && toolResults > 0 {
		return nil // a turn of tool results only
	}
	switch {
	case role == "assistant" && len(parts) == 1:
		msg.Content, err = marshal(*parts[0].Text)
	case role == "user" || len(parts) > 0:
		msg.Content, err = marshal(parts)
	}
	if err != nil {
		return err
	}
	if role == "assistant" && msg.Content == nil && msg.ToolCalls == nil {
		msg.Content = json.RawMessage(`""`)
	}
	out.Messages = append(out.Messages, msg)
	return nil
}

// imageToOpenAI turns an image block's source into an image_url: base64
// into a data: URL, url as it is.
func (c *conv) imageToOpenAI(bo *object) (string, bool, error) {
	so, err := parseObject(bo.get("source"), bo.at("source"))
	if err != nil {
		return "", false, err
	}
	typ, _, err := getString(so, "type")
	if err != nil {
		return "", false, err
	}
	var url string
	switch typ {
	case "base64":
		mt, _, err := getString(so, "media_type")
		if err != nil {
			return "", false, err
		}
		data, _, err := getString(so, "data")
		if err != nil {
			return "", false, err
		}
		url = "data:" + mt + ";base64," + data
	case "url":
		if url, _, err = getString(so, "url"); err != nil {
			return "", false, err
		}
	default:
		if err := c.refuse("messages.content.source.type", so.at("type"), "an image source of type "+quote(typ)+" has no OpenAI equivalent"); err != nil {
			return "", false, err
		}
		return "", false, nil
	}
	return url, true, so.refuseUnused(c, "OpenAI")
}

func (c *conv) toolResultToOpenAI(bo *object) (oaMessage, bool, error) {
	id, err := getRequired(bo, "tool_use_id", "messages.content.tool_use_id")
	if err != nil {
		return oaMessage{}, false, err
	}
	if isErr, _, err := getBool(bo, "is_error"); err != nil {
		return oaMessage{}, false, err
	} else if isErr {
		if err := c.refuse("messages.content.is_error", bo.at("is_error"), "OpenAI's tool messages cannot mark a result as an error"); err != nil {
			return oaMessage{}, false, err
		}
	}
	m := oaMessage{Role: "tool", ToolCallID: id, Content: json.RawMessage(`""`)}
	v := bo.get("content")
	if v == nil {
		return m, true, nil
	}
	if isString(v) {
		m.Content = v
		return m, true, nil
	}
	blocks, err := asArray(v, bo.at("content"))
	if err != nil {
		return m, false, err
	}
	var parts []oaPart
	for k, raw := range blocks {
		io, err := parseObject(raw, index(bo.at("content"), k))
		if err != nil {
			return m, false, err
		}
		typ, _, err := getString(io, "type")
		if err != nil {
			return m, false, err
		}
		if typ != "text" {
			if err := c.refuse("messages.content.content."+typ, io.loc(), "OpenAI's tool messages carry text only"); err != nil {
				return m, false, err
			}
			continue
		}
		text, _, err := getString(io, "text")
		if err != nil {
			return m, false, err
		}
		if err := io.refuseUnused(c, "OpenAI"); err != nil {
			return m, false, err
		}
		parts = append(parts, oaPart{Type: "text", Text: &text})
	}
	if len(parts) > 0 {
		if m.Content, err = marshal(parts); err != nil {
			return m, false, err
		}
	}
	return m, true, nil
}

func toolUseToOpenAI(bo *object) (oaToolCall, error) {
	id, _, err := getString(bo, "id")
	if err != nil {
		return oaToolCall{}, err
	}
	name, _, err := getString(bo, "name")
	if err != nil {
		return oaToolCall{}, err
	}
	input := bo.get("input")
	if input == nil {
		input = json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, input); err != nil {
		return oaToolCall{}, invalid("messages.content.input", bo.at("input"), "is not valid JSON")
	}
	return oaToolCall{ID: id, Type: "function", Function: oaFunction{Name: name, Arguments: buf.String()}}, nil
}
