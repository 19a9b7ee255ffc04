package translate

import (
	"bytes"
	"encoding/json"
	"slices"
)

// ResponsesToChat translates a Responses API request body into a Chat
// Completions one. A stream always asks for stream_options.include_usage
// (the Responses API always reports usage). Dropped names what was
// dropped; a refusal is an *Error naming Param and Path.
//
// The chat request it writes may go on to RequestToAnthropic or a native
// codec, and the chat answer comes back through ChatToResponse or
// NewStreamToResponses. Translated.IncludeUsage is true for a stream: the
// chat stream that feeds NewStreamToResponses must end with its usage
// chunk, whoever writes it (StreamToOpenAI writes it when told to).
func ResponsesToChat(body []byte, opts Options) (*Translated, error) {
	c := &conv{opts: opts, Bender: NewBender(opts)}
	o, model, err := parseRequest(body)
	if err != nil {
		return nil, err
	}
	out := oaRequest{Model: model}
	res := &Translated{}

	if err := c.responsesStateless(o); err != nil {
		return nil, err
	}
	if store, ok, err := getBool(o, "store"); err != nil {
		return nil, err
	} else if ok && !store {
		res.NoStore = true
	}
	if err := c.responsesNeutral(o); err != nil {
		return nil, err
	}
	if mt, ok, err := getInt(o, "max_output_tokens"); err != nil {
		return nil, err
	} else if ok {
		if opts.LegacyMaxTokens {
			out.MaxTokens = &mt
		} else {
			out.MaxCompletionTokens = &mt
		}
	}
	if _, out.Temperature, err = getNumber(o, "temperature"); err != nil {
		return nil, err
	}
	if _, out.TopP, err = getNumber(o, "top_p"); err != nil {
		return nil, err
	}
	if parallel, ok, err := getBool(o, "parallel_tool_calls"); err != nil {
		return nil, err
	} else if ok {
		out.ParallelToolCalls = &parallel
	}
	if out.User, _, err = getString(o, "user"); err != nil {
		return nil, err
	}
	if res.Stream, _, err = getBool(o, "stream"); err != nil {
		return nil, err
	}
	if res.Stream {
		out.Stream = true
		out.StreamOptions = &oaStreamOptions{IncludeUsage: true}
		res.IncludeUsage = true
	}
	if so := o.get("stream_options"); so != nil {
		sob, err := parseObject(so, "stream_options")
		if err != nil {
			return nil, err
		}
		// The chat stream's obfuscation is the gateway's business, and the
		// translated events carry none: false asks for what they are.
		if obf, ok, err := getBool(sob, "include_obfuscation"); err != nil {
			return nil, err
		} else if ok && obf {
			if err := c.refuse("stream_options.include_obfuscation", sob.at("include_obfuscation"), "the translated stream carries no obfuscation padding"); err != nil {
				return nil, err
			}
		}
		if err := refuseRestInChat(c, sob); err != nil {
			return nil, err
		}
	}
	if err := c.responsesTools(o, &out); err != nil {
		return nil, err
	}
	if err := c.responsesText(o, &out); err != nil {
		return nil, err
	}
	if err := c.responsesReasoning(o, &out); err != nil {
		return nil, err
	}
	if v := o.get("instructions"); v != nil {
		s, ok := decodeString(v)
		if !ok {
			return nil, invalid("instructions", "instructions", "must be a string")
		}
		if s != "" {
			out.Messages = append(out.Messages, oaMessage{Role: "system", Content: v})
		}
	}
	if err := c.responsesInput(o, &out); err != nil {
		return nil, err
	}
	if len(out.Messages) == 0 {
		return nil, invalid("input", "input", "is required")
	}
	if err := refuseRestInChat(c, o); err != nil {
		return nil, err
	}
	if res.Body, err = marshal(out); err != nil {
		return nil, err
	}
	res.Dropped = c.Dropped()
	return res, nil
}

// refuseRestInChat refuses every key of o nobody took, as refuseUnused
// does, in the words this translation's target needs.
func refuseRestInChat(c *conv, o *object) error {
	for _, k := range o.unused() {
		p := o.at(k)
		if err := c.refuse(ParamOf(p), p, "has no equivalent in Chat Completions"); err != nil {
			return err
		}
	}
	return nil
}

// responsesStateless takes what needs state the Responses API keeps at
// OpenAI (stored responses, conversations, prompt templates, background
// runs) or a limit chat completions cannot hold the model to. None has a
// counterpart, and each changes what the answer is: refused.
func (c *conv) responsesStateless(o *object) error {
	return c.atDefaults(o, []topLevelCheck{
		{"previous_response_id", never, "a stored response cannot be continued through Chat Completions; send the whole conversation in input"},
		{"conversation", never, "a stored conversation cannot be continued through Chat Completions; send the whole conversation in input"},
		{"prompt", never, "stored prompt templates live at OpenAI; Chat Completions cannot expand them"},
		{"background", isJSON("false"), "Chat Completions answers in the foreground only"},
		{"max_tool_calls", never, "Chat Completions cannot limit the number of built-in tool calls"},
	})
}

// topLevelCheck is a request key that asks for nothing at its default
// value, and otherwise goes to the Bender, for why.
type topLevelCheck struct {
	key       string
	isDefault func(json.RawMessage) bool
	why       string
}

// atDefaults takes each check's key: nothing at its default, else the
// Bender's to drop or refuse.
func (c *conv) atDefaults(o *object, checks []topLevelCheck) error {
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

// responsesNeutral takes what tunes cost, storage or extras and leaves
// the answer's shape alone: at its default it asks for nothing, else it
// is dropped (Neutral) by default.
func (c *conv) responsesNeutral(o *object) error {
	return c.atDefaults(o, []topLevelCheck{
		{"store", isJSON("false"), "a translated response is not stored for retrieval"},
		{"metadata", isEmptyObject, "a translated response is not stored, so it keeps no metadata"},
		{"service_tier", isJSON(`"auto"`), "OpenAI's service tiers do not carry through a translation"},
		{"prompt_cache_key", never, "the prompt cache key is OpenAI's"},
		{"prompt_cache_retention", never, "the prompt cache retention is OpenAI's"},
		{"safety_identifier", never, "the safety identifier is OpenAI's"},
		{"top_logprobs", isJSON("0"), "the translated answer carries no log probabilities"},
		{"truncation", isJSON(`"disabled"`), "Chat Completions never truncates the conversation to fit; it fails instead"},
		{"include", isEmptyArray, "the translated answer carries none of the extra data include asks for"},
	})
}

func isEmptyArray(v json.RawMessage) bool {
	var a []json.RawMessage
	return json.Unmarshal(v, &a) == nil && len(a) == 0
}

// responsesTools: function tools become chat's, wrapped in "function";
// the built-in tools run at OpenAI and are refused.
func (c *conv) responsesTools(o *object, out *oaRequest) error {
	tools, err := getArray(o, "tools")
	if err != nil {
		return err
	}
	for i, raw := range tools {
		to, err := parseObject(raw, index("tools", i))
		if err != nil {
			return err
		}
		typ, _, err := getString(to, "type")
		if err != nil {
			return err
		}
		if typ != "function" {
			if err := c.refuse("tools.type", to.at("type"), "only function tools translate; "+quote(typ)+" is a tool OpenAI runs, which Chat Completions cannot"); err != nil {
				return err
			}
			continue
		}
		var f oaFunctionDef
		if f.Name, err = getRequired(to, "name", "tools.name"); err != nil {
			return err
		}
		if f.Description, _, err = getString(to, "description"); err != nil {
			return err
		}
		if p := to.get("parameters"); p != nil {
			if !isObject(p) {
				return invalid("tools.parameters", to.at("parameters"), "must be a JSON schema object")
			}
			f.Parameters = p
		}
		// An absent strict is strict at OpenAI's Responses API, which then
		// rewrites the schema into strict form; chat's absent strict is
		// not. The schema is the client's, so it is sent as written,
		// without strict: only strict: true asks for it.
		if f.Strict, _, err = getBool(to, "strict"); err != nil {
			return err
		}
		if err := refuseRestInChat(c, to); err != nil {
			return err
		}
		out.Tools = append(out.Tools, oaTool{Type: "function", Function: f})
	}
	raw := o.get("tool_choice")
	if raw == nil {
		return nil
	}
	if isString(raw) {
		s, _ := decodeString(raw)
		switch s {
		case "auto", "none", "required":
			out.ToolChoice = s
			return nil
		}
		return invalid("tool_choice", "tool_choice", "must be auto, none, required or a function")
	}
	tc, err := parseObject(raw, "tool_choice")
	if err != nil {
		return err
	}
	typ, _, err := getString(tc, "type")
	if err != nil {
		return err
	}
	if typ != "function" {
		return c.refuse("tool_choice", tc.at("type"), "a tool_choice of type "+quote(typ)+" has no Chat Completions equivalent")
	}
	name, err := getRequired(tc, "name", "tool_choice.name")
	if err != nil {
		return err
	}
	if err := refuseRestInChat(c, tc); err != nil {
		return err
	}
	var named oaNamedToolChoice
	named.Type = "function"
	named.Function.Name = name
	out.ToolChoice = named
	return nil
}

// responsesText: text.format is chat's response_format; text.verbosity
// tunes length, not shape.
func (c *conv) responsesText(o *object, out *oaRequest) error {
	raw := o.get("text")
	if raw == nil {
		return nil
	}
	to, err := parseObject(raw, "text")
	if err != nil {
		return err
	}
	if v, ok, err := getString(to, "verbosity"); err != nil {
		return err
	} else if ok && v != "medium" {
		if err := c.refuse("text.verbosity", to.at("verbosity"), "Chat Completions has no verbosity for every model; the answer comes at the model's own length"); err != nil {
			return err
		}
	}
	if f := to.get("format"); f != nil {
		fo, err := parseObject(f, to.at("format"))
		if err != nil {
			return err
		}
		typ, _, err := getString(fo, "type")
		if err != nil {
			return err
		}
		switch typ {
		case "text":
		case "json_object":
			out.ResponseFormat = &oaResponseFormat{Type: "json_object"}
		case "json_schema":
			js := &oaJSONSchema{}
			if js.Name, err = getRequired(fo, "name", "text.format.name"); err != nil {
				return err
			}
			if js.Description, _, err = getString(fo, "description"); err != nil {
				return err
			}
			if js.Schema = fo.get("schema"); js.Schema == nil || !isObject(js.Schema) {
				return invalid("text.format.schema", fo.at("schema"), "is required and must be a JSON schema object")
			}
			if strict, ok, err := getBool(fo, "strict"); err != nil {
				return err
			} else if ok {
				js.Strict = &strict
			}
			out.ResponseFormat = &oaResponseFormat{Type: "json_schema", JSONSchema: js}
		default:
			if err := c.refuse("text.format", fo.at("type"), "a text format of type "+quote(typ)+" has no Chat Completions equivalent"); err != nil {
				return err
			}
			return refuseRestInChat(c, to)
		}
		if err := refuseRestInChat(c, fo); err != nil {
			return err
		}
	}
	return refuseRestInChat(c, to)
}

// responsesReasoning: reasoning.effort is chat's reasoning_effort; a
// summary of the reasoning is something chat completions never return.
func (c *conv) responsesReasoning(o *object, out *oaRequest) error {
	raw := o.get("reasoning")
	if raw == nil {
		return nil
	}
	ro, err := parseObject(raw, "reasoning")
	if err != nil {
		return err
	}
	if out.ReasoningEffort, _, err = getString(ro, "effort"); err != nil {
		return err
	}
	for _, k := range []string{"summary", "generate_summary"} {
		if ro.get(k) == nil {
			continue
		}
		if err := c.refuse("reasoning."+k, ro.at(k), "Chat Completions returns no summary of the model's reasoning"); err != nil {
			return err
		}
	}
	return refuseRestInChat(c, ro)
}

// responsesInput turns input into chat messages: a string is one user
// message; items are messages, function calls (consecutive ones, and an
// assistant message just before them, are one assistant message) and
// their outputs (tool messages).
func (c *conv) responsesInput(o *object, out *oaRequest) error {
	v := o.get("input")
	if v == nil {
		return nil
	}
	if isString(v) {
		out.Messages = append(out.Messages, oaMessage{Role: "user", Content: v})
		return nil
	}
	if isArray(v) {
		// A message each, most often: sized once, not by doubling.
		out.Messages = slices.Grow(out.Messages, elementCount(bytes.TrimSpace(v)))
	}
	io := &object{} // one for every item
	return eachElement(v, "input", func(i int, raw json.RawMessage) error {
		if err := io.parseAt(raw, "input", i); err != nil {
			return err
		}
		typ, _, err := getString(io, "type")
		if err != nil {
			return err
		}
		switch typ {
		case "", "message":
			err = c.inputMessage(io, out)
		case "function_call":
			err = c.inputFunctionCall(io, out)
		case "function_call_output":
			err = c.inputFunctionOutput(io, out)
		case "reasoning":
			// The model's earlier reasoning: chat completions take none
			// back. The item is left out whole, its keys unread.
			err = c.refuse("input.reasoning", io.loc(), "Chat Completions takes no reasoning items back")
		case "item_reference":
			err = c.inputReference(io, out)
		default:
			// web_search_call, file_search_call, computer_call and the
			// other built-in tools' items, and their outputs: what a tool
			// OpenAI runs did.
			err = c.refuse("input."+typ, io.loc(), "an input item of type "+quote(typ)+" has no Chat Completions equivalent")
		}
		if err != nil {
			return err
		}
		switch typ {
		case "", "message", "function_call", "function_call_output":
			return refuseRestInChat(c, io)
		}
		return nil
	})
}

// inputReference reads an item_reference as the item it names, when the
// host kept it (Options.Items: an item of an answer it bridged); any
// other reference points into OpenAI's stored items, which Chat
// Completions cannot read.
func (c *conv) inputReference(io *object, out *oaRequest) error {
	id, _, err := getString(io, "id")
	if err != nil {
		return err
	}
	if c.opts.Items != nil {
		if item, ok := c.opts.Items(id); ok {
			ro, err := parseObject(item, io.loc())
			if err != nil {
				return err
			}
			typ, _, err := getString(ro, "type")
			if err != nil {
				return err
			}
			switch typ {
			case "message":
				err = c.inputMessage(ro, out)
			case "function_call":
				err = c.inputFunctionCall(ro, out)
			default:
				return invalid("input.item_reference", io.loc(), "item "+quote(id)+" is of type "+quote(typ)+", which cannot be referred to")
			}
			if err != nil {
				return err
			}
			return refuseRestInChat(c, ro)
		}
	}
	return c.refuse("input.item_reference", io.loc(), "item "+quote(id)+" is not one Sluice keeps: a reference points into stored items, which Chat Completions cannot read; send the item itself (the AI SDK does with store: false)")
}

// itemBookkeeping takes an input item's id and status: they describe the
// item as OpenAI produced it, and ask nothing. A status other than
// completed (an answer cut short) cannot be said in chat completions.
func (c *conv) itemBookkeeping(io *object) error {
	if _, _, err := getString(io, "id"); err != nil {
		return err
	}
	status, ok, err := getString(io, "status")
	if err != nil || !ok || status == "completed" {
		return err
	}
	return c.refuse("input.status", io.at("status"), "Chat Completions cannot mark a past turn as "+status)
}

func (c *conv) inputMessage(io *object, out *oaRequest) error {
	role, ok, err := getString(io, "role")
	if err != nil {
		return err
	}
	if !ok {
		return invalid("input.role", io.at("role"), "is required")
	}
	if err := c.itemBookkeeping(io); err != nil {
		return err
	}
	if _, ok, err := getString(io, "phase"); err != nil {
		return err
	} else if ok {
		if err := c.refuse("input.phase", io.at("phase"), "Chat Completions does not label an assistant turn's phase"); err != nil {
			return err
		}
	}
	content := io.get("content")
	if content == nil {
		return invalid("input.content", io.at("content"), "is required")
	}
	var msg oaMessage
	switch role {
	case "user", "system", "developer":
		msg = oaMessage{Role: role, Content: content}
		if !isString(content) {
			parts, err := c.inputParts(io, role)
			if err != nil {
				return err
			}
			if msg.Content, err = marshal(parts); err != nil {
				return err
			}
		}
	case "assistant":
		msg = oaMessage{Role: "assistant", Content: content}
		if !isString(content) {
			parts, err := c.outputParts(io)
			if err != nil {
				return err
			}
			switch len(parts) {
			case 0:
				msg.Content = json.RawMessage(`""`)
			case 1:
				msg.Content, err = marshal(*parts[0].Text)
			default:
				msg.Content, err = marshal(parts)
			}
			if err != nil {
				return err
			}
		}
	default:
		return invalid("input.role", io.at("role"), "must be user, assistant, system or developer")
	}
	out.Messages = append(out.Messages, msg)
	return nil
}

// inputParts reads a user, system or developer message's parts. System
// and developer messages carry text only, in chat completions as at
// OpenAI.
func (c *conv) inputParts(io *object, role string) ([]oaPart, error) {
	content, path := io.get("content"), io.at("content")
	if !isArray(content) {
		return nil, invalid(ParamOf(path), path, "must be an array")
	}
	parts := make([]oaPart, 0, elementCount(bytes.TrimSpace(content)))
	po := &object{} // one for every part
	err := eachElement(content, path, func(j int, raw json.RawMessage) error {
		if err := po.parseAt(raw, path, j); err != nil {
			return err
		}
		typ, _, err := getString(po, "type")
		if err != nil {
			return err
		}
		var part oaPart
		switch {
		case typ == "input_text":
			text, ok, err := getString(po, "text")
			if err != nil {
				return err
			}
			if !ok {
				return invalid("input.content.text", po.at("text"), "is required")
			}
			part = oaPart{Type: "text", Text: &text}
		case typ == "input_image" && role == "user":
			ok, err := c.inputImage(po, &part)
			if err != nil || !ok {
				return err
			}
		case typ == "input_file" && role == "user":
			ok, err := c.inputFile(po, &part)
			if err != nil || !ok {
				return err
			}
		case typ == "output_text" || typ == "refusal":
			return invalid("input.content.type", po.at("type"), "a "+role+" message's content is input_text, input_image or input_file; "+typ+" is an assistant's")
		default:
			return c.refuse("input.content."+typ, po.loc(), "a "+role+" message's "+quote(typ)+" content has no Chat Completions equivalent")
		}
		if err := refuseRestInChat(c, po); err != nil {
			return err
		}
		parts = append(parts, part)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return parts, nil
}

// inputImage: an image's URL (http(s) or data:) and detail are chat's
// image_url; an uploaded file's id has no place there. ok is false when
// the part was dropped.
func (c *conv) inputImage(po *object, part *oaPart) (bool, error) {
	url, hasURL, err := getString(po, "image_url")
	if err != nil {
		return false, err
	}
	if _, ok, err := getString(po, "file_id"); err != nil {
		return false, err
	} else if ok {
		if err := c.refuse("input.content.file_id", po.at("file_id"), "Chat Completions takes an image by URL, not by uploaded file id"); err != nil {
			return false, err
		}
		if !hasURL {
			return false, nil
		}
	}
	if !hasURL || url == "" {
		return false, invalid("input.content.image_url", po.at("image_url"), "is required")
	}
	detail, _, err := getString(po, "detail")
	if err != nil {
		return false, err
	}
	*part = oaPart{Type: "image_url", ImageURL: &oaImageURL{URL: url, Detail: detail}}
	return true, nil
}

// inputFile: inline data and an uploaded file's id are chat's file part;
// a file by URL is not. ok is false when the part was dropped.
func (c *conv) inputFile(po *object, part *oaPart) (bool, error) {
	var f oaFile
	var err error
	if f.FileData, _, err = getString(po, "file_data"); err != nil {
		return false, err
	}
	if f.FileID, _, err = getString(po, "file_id"); err != nil {
		return false, err
	}
	if f.Filename, _, err = getString(po, "filename"); err != nil {
		return false, err
	}
	if _, ok, err := getString(po, "file_url"); err != nil {
		return false, err
	} else if ok {
		if err := c.refuse("input.content.file_url", po.at("file_url"), "Chat Completions takes a file inline or by uploaded file id, not by URL"); err != nil {
			return false, err
		}
		if f.FileData == "" && f.FileID == "" {
			return false, nil
		}
	}
	if f.FileData == "" && f.FileID == "" {
		return false, invalid("input.content.file_data", po.at("file_data"), "a file needs file_data or file_id")
	}
	*part = oaPart{Type: "file", File: &f}
	return true, nil
}

// outputParts reads an assistant message's parts as text parts. A refusal
// is what the assistant said, and goes back as its text: chat
// completions take an assistant's earlier refusal as content too.
func (c *conv) outputParts(io *object) ([]oaPart, error) {
	raws, err := asArray(io.get("content"), io.at("content"))
	if err != nil {
		return nil, err
	}
	var parts []oaPart
	for j, raw := range raws {
		po, err := parseObject(raw, index(io.at("content"), j))
		if err != nil {
			return nil, err
		}
		typ, _, err := getString(po, "type")
		if err != nil {
			return nil, err
		}
		var text string
		switch typ {
		case "output_text":
			var ok bool
			if text, ok, err = getString(po, "text"); err != nil {
				return nil, err
			} else if !ok {
				return nil, invalid("input.content.text", po.at("text"), "is required")
			}
			// Citations and log probabilities describe the earlier
			// answer; the model reads its text alone.
			for _, k := range []string{"annotations", "logprobs"} {
				if v := po.get(k); v != nil && !isEmptyArray(v) {
					if err := c.refuse("input.content."+k, po.at(k), "Chat Completions takes an assistant's text without its "+k); err != nil {
						return nil, err
					}
				}
			}
		case "refusal":
			var ok bool
			if text, ok, err = getString(po, "refusal"); err != nil {
				return nil, err
			} else if !ok {
				return nil, invalid("input.content.refusal", po.at("refusal"), "is required")
			}
		case "input_text", "input_image", "input_file":
			return nil, invalid("input.content.type", po.at("type"), "an assistant message's content is output_text or refusal; "+typ+" is a user's")
		default:
			if err := c.refuse("input.content."+typ, po.loc(), "an assistant's "+quote(typ)+" content has no Chat Completions equivalent"); err != nil {
				return nil, err
			}
			continue
		}
		if err := refuseRestInChat(c, po); err != nil {
			return nil, err
		}
		parts = append(parts, oaPart{Type: "text", Text: &text})
	}
	return parts, nil
}

// inputFunctionCall adds a call to the assistant message just before it
// (one that holds text or earlier calls), or starts one: chat completions
// hold a turn's calls in one assistant message.
func (c *conv) inputFunctionCall(io *object, out *oaRequest) error {
	callID, err := getRequired(io, "call_id", "input.call_id")
	if err != nil {
		return err
	}
	name, err := getRequired(io, "name", "input.name")
	if err != nil {
		return err
	}
	args, ok, err := getString(io, "arguments")
	if err != nil {
		return err
	}
	if !ok {
		return invalid("input.arguments", io.at("arguments"), "is required")
	}
	if err := c.itemBookkeeping(io); err != nil {
		return err
	}
	call := oaToolCall{ID: callID, Type: "function", Function: oaFunction{Name: name, Arguments: args}}
	if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == "assistant" {
		last := &out.Messages[n-1]
		// An empty text beside the calls says nothing: chat writes none.
		if text, ok := decodeString(last.Content); ok && text == "" && last.ToolCalls == nil {
			last.Content = nil
		}
		last.ToolCalls = append(last.ToolCalls, call)
		return nil
	}
	out.Messages = append(out.Messages, oaMessage{Role: "assistant", ToolCalls: []oaToolCall{call}})
	return nil
}

// inputFunctionOutput is a tool message: a string, or text parts.
func (c *conv) inputFunctionOutput(io *object, out *oaRequest) error {
	callID, err := getRequired(io, "call_id", "input.call_id")
	if err != nil {
		return err
	}
	if err := c.itemBookkeeping(io); err != nil {
		return err
	}
	v := io.get("output")
	if v == nil {
		return invalid("input.output", io.at("output"), "is required")
	}
	m := oaMessage{Role: "tool", ToolCallID: callID, Content: v}
	if !isString(v) {
		raws, err := asArray(v, io.at("output"))
		if err != nil {
			return invalid("input.output", io.at("output"), "must be a string or an array of content parts")
		}
		parts := []oaPart{}
		for j, raw := range raws {
			po, err := parseObject(raw, index(io.at("output"), j))
			if err != nil {
				return err
			}
			typ, _, err := getString(po, "type")
			if err != nil {
				return err
			}
			if typ != "input_text" {
				if err := c.refuse("input.output."+typ, po.loc(), "Chat Completions' tool messages carry text only"); err != nil {
					return err
				}
				continue
			}
			text, ok, err := getString(po, "text")
			if err != nil {
				return err
			}
			if !ok {
				return invalid("input.output.text", po.at("text"), "is required")
			}
			if err := refuseRestInChat(c, po); err != nil {
				return err
			}
			parts = append(parts, oaPart{Type: "text", Text: &text})
		}
		if m.Content, err = marshal(parts); err != nil {
			return err
		}
	}
	out.Messages = append(out.Messages, m)
	return nil
}

// isObject reports whether v is a JSON object.
func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}
