package bedrock

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// JSONAnswerTool is the tool a structured-output request is forced to
// call: Converse has no portable native structured output, so the hub's
// output_config.format schema becomes this tool's input schema, and the
// Reply turns the tool's input back into the answer's text.
const JSONAnswerTool = "sluice_json_answer"

// codec is the gateway's side.
type codec struct{}

// isAnthropic reports whether a Bedrock model id (a base model id, an
// inference profile id such as "us.anthropic.claude-…", or an ARN naming
// one) is one of Anthropic's Claude models, which take Anthropic's own
// fields (top_k, thinking) through additionalModelRequestFields.
func isAnthropic(model string) bool { return strings.Contains(model, "anthropic.") }

// Request turns a hub request into a Converse request.
func (codec) Request(hub []byte, model string, opts translate.Options) (*native.Call, error) {
	b := translate.NewBender(opts)
	top, err := parseObj(hub, "")
	if err != nil {
		return nil, invalid("", "", "the request body must be a JSON object")
	}
	r := &requestConv{b: &b, model: model, anthropic: isAnthropic(model)}
	call, err := r.convert(top)
	if err != nil {
		return nil, err
	}
	call.Dropped = b.Dropped()
	return call, nil
}

type requestConv struct {
	b         *translate.Bender
	model     string
	anthropic bool // isAnthropic(model)
	// toolBlocks: the conversation holds toolUse or toolResult blocks,
	// which Converse accepts only with a toolConfig.
	toolBlocks bool
}

func (r *requestConv) convert(top *obj) (*native.Call, error) {
	var out cvRequest
	if _, err := top.str("model"); err != nil {
		return nil, err
	}
	stream, err := top.boolean("stream")
	if err != nil {
		return nil, err
	}
	if err := r.system(top, &out); err != nil {
		return nil, err
	}
	msgs, err := top.array("messages")
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, invalid("messages", "messages", "at least one message is required")
	}
	for i, raw := range msgs {
		m, err := r.message(raw, index("messages", i))
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, m)
	}
	if err := r.inference(top, &out); err != nil {
		return nil, err
	}
	forced, err := r.tools(top, &out)
	if err != nil {
		return nil, err
	}
	if err := r.thinking(top, &out, forced != ""); err != nil {
		return nil, err
	}
	if md, err := top.object("metadata"); err != nil {
		return nil, err
	} else if md != nil {
		// A user id (or any metadata) has no effect on the answer.
		last := md.last()
		keys := slices.Sorted(maps.Keys(last))
		for _, k := range keys {
			if isNull(md.fields[last[k]].val) {
				continue
			}
			if err := r.b.Refuse("metadata."+k, md.at(k), "Converse has no end-user id", true); err != nil {
				return nil, err
			}
		}
	}
	if err := top.rest(r.b); err != nil {
		return nil, err
	}
	body, err := json.Marshal(&out)
	if err != nil {
		return nil, invalid("", "", "cannot be encoded: "+err.Error())
	}
	op := "converse"
	if stream {
		op = "converse-stream"
	}
	return &native.Call{
		Path:   "/model/" + url.PathEscape(r.model) + "/" + op,
		Body:   body,
		Stream: stream,
		Reply:  &reply{model: r.model, forced: forced, request: hashOf(body)},
	}, nil
}

// system: a string or text blocks → system [{text}].
func (r *requestConv) system(top *obj, out *cvRequest) error {
	v := top.take("system")
	if v == nil {
		return nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s != "" {
			out.System = []cvSystem{{Text: s}}
		}
		return nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(v, &blocks) != nil {
		return invalid("system", "system", "must be a string or an array of text blocks")
	}
	for i, raw := range blocks {
		p := index("system", i)
		o, err := parseObj(raw, p)
		if err != nil {
			return err
		}
		typ, err := o.str("type")
		if err != nil {
			return err
		}
		if typ != "text" {
			if err := r.b.Refuse("system."+typ, p, "a system prompt can carry only text", false); err != nil {
				return err
			}
			continue
		}
		text, err := o.str("text")
		if err != nil {
			return err
		}
		if err := o.rest(r.b); err != nil {
			return err
		}
		out.System = append(out.System, cvSystem{Text: text})
	}
	return nil
}

func (r *requestConv) message(raw json.RawMessage, p string) (cvMessage, error) {
	o, err := parseObj(raw, p)
	if err != nil {
		return cvMessage{}, err
	}
	role, err := o.str("role")
	if err != nil {
		return cvMessage{}, err
	}
	if role != "user" && role != "assistant" {
		return cvMessage{}, invalid("messages.role", o.at("role"), "must be user or assistant")
	}
	m := cvMessage{Role: role, Content: []cvBlock{}}
	content := o.take("content")
	var s string
	switch {
	case content == nil:
		return cvMessage{}, invalid("messages.content", o.at("content"), "is required")
	case json.Unmarshal(content, &s) == nil:
		m.Content = append(m.Content, cvBlock{Text: &s})
	default:
		var blocks []json.RawMessage
		if json.Unmarshal(content, &blocks) != nil {
			return cvMessage{}, invalid("messages.content", o.at("content"), "must be a string or an array of content blocks")
		}
		for i, braw := range blocks {
			blk, ok, err := r.block(braw, index(o.at("content"), i))
			if err != nil {
				return cvMessage{}, err
			}
			if ok {
				m.Content = append(m.Content, blk)
			}
		}
	}
	if err := o.rest(r.b); err != nil {
		return cvMessage{}, err
	}
	return m, nil
}

// block turns one hub content block into Converse's; ok is false when
// it was dropped.
func (r *requestConv) block(raw json.RawMessage, p string) (cvBlock, bool, error) {
	o, err := parseObj(raw, p)
	if err != nil {
		return cvBlock{}, false, err
	}
	typ, err := o.str("type")
	if err != nil {
		return cvBlock{}, false, err
	}
	var blk cvBlock
	switch typ {
	case "text":
		text, err := o.str("text")
		if err != nil {
			return cvBlock{}, false, err
		}
		blk.Text = &text
	case "image":
		img, ok, err := r.image(o)
		if err != nil || !ok {
			return cvBlock{}, false, err
		}
		blk.Image = img
	case "tool_use":
		r.toolBlocks = true
		id, err := o.str("id")
		if err != nil {
			return cvBlock{}, false, err
		}
		name, err := o.str("name")
		if err != nil {
			return cvBlock{}, false, err
		}
		input := o.take("input")
		if input == nil {
			input = json.RawMessage(`{}`)
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(input, &in) != nil {
			return cvBlock{}, false, invalid("messages.content.input", o.at("input"), "must be a JSON object")
		}
		blk.ToolUse = &cvToolUse{ToolUseID: id, Name: name, Input: input}
	case "tool_result":
		r.toolBlocks = true
		res, err := r.toolResult(o)
		if err != nil {
			return cvBlock{}, false, err
		}
		blk.ToolResult = res
	case "thinking", "redacted_thinking":
		if !r.anthropic {
			// Earlier reasoning is the model's own scratch: another
			// family cannot read it, and the answer keeps its shape.
			if err := r.b.Refuse("messages.content."+typ, p, "only Anthropic's models on Bedrock take earlier thinking back", true); err != nil {
				return cvBlock{}, false, err
			}
			return cvBlock{}, false, nil
		}
		var rc cvReasoningContent
		if typ == "thinking" {
			text, err := o.str("thinking")
			if err != nil {
				return cvBlock{}, false, err
			}
			sig, err := o.str("signature")
			if err != nil {
				return cvBlock{}, false, err
			}
			rc.ReasoningText = &struct {
				Text      string `json:"text"`
				Signature string `json:"signature,omitempty"`
			}{text, sig}
		} else {
			data, err := o.str("data")
			if err != nil {
				return cvBlock{}, false, err
			}
			rc.RedactedContent = data
		}
		blk.ReasoningContent = &rc
	default:
		if err := r.b.Refuse("messages.content."+typ, p, "content of type "+quoted(typ)+" has no Converse equivalent in Sluice", false); err != nil {
			return cvBlock{}, false, err
		}
		return cvBlock{}, false, nil
	}
	if err := o.rest(r.b); err != nil {
		return cvBlock{}, false, err
	}
	return blk, true, nil
}

func quoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// imageFormats: the hub's media types Converse takes, and its names.
var imageFormats = map[string]string{
	"image/png":  "png",
	"image/jpeg": "jpeg",
	"image/gif":  "gif",
	"image/webp": "webp",
}

// image reads an image block's source: base64 only.
func (r *requestConv) image(o *obj) (*cvImage, bool, error) {
	src, err := o.object("source")
	if err != nil {
		return nil, false, err
	}
	if src == nil {
		return nil, false, invalid("messages.content.source", o.at("source"), "an image needs its source")
	}
	typ, err := src.str("type")
	if err != nil {
		return nil, false, err
	}
	if typ != "base64" {
		if err := r.b.Refuse("messages.content.source.type", src.at("type"), "Converse takes images as bytes only, not a source of type "+quoted(typ), false); err != nil {
			return nil, false, err
		}
		return nil, false, nil
	}
	mt, err := src.str("media_type")
	if err != nil {
		return nil, false, err
	}
	data, err := src.str("data")
	if err != nil {
		return nil, false, err
	}
	format, ok := imageFormats[mt]
	if !ok {
		return nil, false, invalid("messages.content.source.media_type", src.at("media_type"), "must be image/png, image/jpeg, image/gif or image/webp")
	}
	if err := src.rest(r.b); err != nil {
		return nil, false, err
	}
	img := &cvImage{Format: format}
	img.Source.Bytes = data
	return img, true, nil
}

// toolResult: content (a string or text and image blocks) and is_error.
func (r *requestConv) toolResult(o *obj) (*cvToolResult, error) {
	id, err := o.str("tool_use_id")
	if err != nil {
		return nil, err
	}
	res := &cvToolResult{ToolUseID: id, Content: []cvBlock{}}
	isErr, err := o.boolean("is_error")
	if err != nil {
		return nil, err
	}
	if isErr {
		if r.anthropic || strings.Contains(r.model, "amazon.nova") {
			res.Status = "error"
		} else if err := r.b.Refuse("messages.content.is_error", o.at("is_error"), "Converse marks a tool result as an error only for Anthropic's and Amazon's Nova models", true); err != nil {
			return nil, err
		}
	}
	content := o.take("content")
	var s string
	switch {
	case content == nil:
	case json.Unmarshal(content, &s) == nil:
		res.Content = append(res.Content, cvBlock{Text: &s})
	default:
		var blocks []json.RawMessage
		if json.Unmarshal(content, &blocks) != nil {
			return nil, invalid("messages.content.content", o.at("content"), "must be a string or an array of content blocks")
		}
		for i, braw := range blocks {
			p := index(o.at("content"), i)
			bo, err := parseObj(braw, p)
			if err != nil {
				return nil, err
			}
			typ, err := bo.str("type")
			if err != nil {
				return nil, err
			}
			var blk cvBlock
			switch typ {
			case "text":
				text, err := bo.str("text")
				if err != nil {
					return nil, err
				}
				blk.Text = &text
			case "image":
				img, ok, err := r.image(bo)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				blk.Image = img
			default:
				if err := r.b.Refuse("messages.content.content."+typ, p, "a tool result of type "+quoted(typ)+" has no Converse equivalent in Sluice", false); err != nil {
					return nil, err
				}
				continue
			}
			if err := bo.rest(r.b); err != nil {
				return nil, err
			}
			res.Content = append(res.Content, blk)
		}
	}
	return res, nil
}

// inference: max_tokens, temperature, top_p, stop_sequences, and top_k
// for Anthropic's models.
func (r *requestConv) inference(top *obj, out *cvRequest) error {
	var ic cvInference
	var err error
	if ic.MaxTokens, err = top.integer("max_tokens"); err != nil {
		return err
	}
	if ic.Temperature, err = top.num("temperature"); err != nil {
		return err
	}
	if ic.TopP, err = top.num("top_p"); err != nil {
		return err
	}
	if v := top.take("stop_sequences"); v != nil {
		if json.Unmarshal(v, &ic.StopSequences) != nil {
			return invalid("stop_sequences", "stop_sequences", "must be an array of strings")
		}
	}
	if ic.MaxTokens != nil || ic.Temperature != nil || ic.TopP != nil || len(ic.StopSequences) > 0 {
		out.InferenceConfig = &ic
	}
	topK, err := top.integer("top_k")
	if err != nil {
		return err
	}
	if topK != nil {
		if r.anthropic {
			r.additional(out, "top_k", *topK)
		} else if err := r.b.Refuse("top_k", "top_k", "Converse has no top_k for models other than Anthropic's", true); err != nil {
			return err
		}
	}
	return nil
}

func (r *requestConv) additional(out *cvRequest, key string, v any) {
	if out.AdditionalModelRequestFields == nil {
		out.AdditionalModelRequestFields = map[string]any{}
	}
	out.AdditionalModelRequestFields[key] = v
}

// thinking: Anthropic's thinking object, for Anthropic's models only.
func (r *requestConv) thinking(top *obj, out *cvRequest, forced bool) error {
	th, err := top.object("thinking")
	if err != nil || th == nil {
		return err
	}
	typ, err := th.str("type")
	if err != nil {
		return err
	}
	budget, err := th.integer("budget_tokens")
	if err != nil {
		return err
	}
	switch typ {
	case "disabled":
		return th.rest(r.b)
	case "enabled":
		if budget == nil {
			return invalid("thinking.budget_tokens", th.at("budget_tokens"), "is required when thinking is enabled")
		}
	default:
		return invalid("thinking.type", th.at("type"), "must be enabled or disabled")
	}
	if err := th.rest(r.b); err != nil {
		return err
	}
	if !r.anthropic {
		// A thinking budget has no effect on the answer's shape.
		return r.b.Refuse("thinking", "thinking", "Converse takes a thinking budget only for Anthropic's models", true)
	}
	if forced {
		// Anthropic's models refuse thinking with a forced tool call,
		// which is what a structured answer is here.
		return r.b.Refuse("thinking", "thinking", "on Bedrock a structured answer is a forced tool call, which Anthropic's models do not take with thinking", true)
	}
	r.additional(out, "thinking", map[string]any{"type": "enabled", "budget_tokens": *budget})
	return nil
}

// tools: tools, tool_choice and output_config. It returns the name of
// the tool forced to carry a structured answer, "" when there is none.
func (r *requestConv) tools(top *obj, out *cvRequest) (string, error) {
	tools, err := top.array("tools")
	if err != nil {
		return "", err
	}
	var tc cvToolConfig
	for i, raw := range tools {
		p := index("tools", i)
		o, err := parseObj(raw, p)
		if err != nil {
			return "", err
		}
		typ, err := o.str("type")
		if err != nil {
			return "", err
		}
		if typ != "" && typ != "custom" {
			if err := r.b.Refuse("tools.type", o.at("type"), quoted(typ)+" is an Anthropic server tool with no Converse equivalent", false); err != nil {
				return "", err
			}
			continue
		}
		spec := &cvToolSpec{}
		if spec.Name, err = o.str("name"); err != nil {
			return "", err
		}
		if spec.Name == "" {
			return "", invalid("tools.name", o.at("name"), "is required")
		}
		if spec.Description, err = o.str("description"); err != nil {
			return "", err
		}
		schema := o.take("input_schema")
		if schema == nil {
			return "", invalid("tools.input_schema", o.at("input_schema"), "is required")
		}
		var so map[string]json.RawMessage
		if json.Unmarshal(schema, &so) != nil {
			return "", invalid("tools.input_schema", o.at("input_schema"), "must be a JSON object")
		}
		spec.InputSchema.JSON = schema
		if err := o.rest(r.b); err != nil {
			return "", err
		}
		tc.Tools = append(tc.Tools, cvTool{ToolSpec: spec})
	}
	none := false
	if ch, err := top.object("tool_choice"); err != nil {
		return "", err
	} else if ch != nil {
		typ, err := ch.str("type")
		if err != nil {
			return "", err
		}
		name, err := ch.str("name")
		if err != nil {
			return "", err
		}
		if dp, err := ch.boolean("disable_parallel_tool_use"); err != nil {
			return "", err
		} else if dp {
			// Converse cannot forbid parallel calls; the answer is still
			// a well-formed tool-use answer, so the default drops it.
			if err := r.b.Refuse("tool_choice.disable_parallel_tool_use", ch.at("disable_parallel_tool_use"), "Converse cannot forbid parallel tool calls", true); err != nil {
				return "", err
			}
		}
		switch typ {
		case "auto":
			tc.ToolChoice = &cvToolChoice{Auto: &struct{}{}}
		case "any":
			tc.ToolChoice = &cvToolChoice{Any: &struct{}{}}
		case "tool":
			if name == "" {
				return "", invalid("tool_choice.name", ch.at("name"), "is required when type is tool")
			}
			tc.ToolChoice = &cvToolChoice{Tool: &struct {
				Name string `json:"name"`
			}{name}}
		case "none":
			none = true
		default:
			return "", invalid("tool_choice.type", ch.at("type"), "must be auto, any, tool or none")
		}
		if err := ch.rest(r.b); err != nil {
			return "", err
		}
	}
	if none {
		// Converse has no "none": the model is kept from calling tools
		// by not seeing them. A conversation that already holds tool
		// calls needs its toolConfig, so there "none" cannot be kept.
		if !r.toolBlocks {
			tc.Tools = nil
		} else if err := r.b.Refuse("tool_choice", "tool_choice.type", "Converse has no tool_choice none, and a conversation holding tool calls must declare its tools", false); err != nil {
			return "", err
		}
	}
	forced, err := r.outputConfig(top, &tc)
	if err != nil {
		return "", err
	}
	if len(tc.Tools) > 0 {
		out.ToolConfig = &tc
	}
	return forced, nil
}

// outputConfig: output_config.format json_schema → a forced call of
// JSONAnswerTool.
func (r *requestConv) outputConfig(top *obj, tc *cvToolConfig) (string, error) {
	oc, err := top.object("output_config")
	if err != nil || oc == nil {
		return "", err
	}
	f, err := oc.object("format")
	if err != nil {
		return "", err
	}
	if err := oc.rest(r.b); err != nil {
		return "", err
	}
	if f == nil {
		return "", nil
	}
	typ, err := f.str("type")
	if err != nil {
		return "", err
	}
	if typ != "json_schema" {
		return "", invalid("output_config.format.type", f.at("type"), "must be json_schema")
	}
	schema := f.take("schema")
	var so map[string]json.RawMessage
	if schema == nil || json.Unmarshal(schema, &so) != nil {
		return "", invalid("output_config.format.schema", f.at("schema"), "must be a JSON object")
	}
	if err := f.rest(r.b); err != nil {
		return "", err
	}
	if len(tc.Tools) > 0 || r.toolBlocks {
		// The answer is forced to one tool call; the request's own tools
		// could not be called, and their history could not be kept apart.
		return "", r.b.Refuse("output_config.format", f.path, "on Bedrock a structured answer is a forced tool call, which cannot be combined with the request's own tools", false)
	}
	spec := &cvToolSpec{Name: JSONAnswerTool, Description: "Give the answer: this tool's input is the whole answer, as JSON matching its schema."}
	spec.InputSchema.JSON = schema
	tc.Tools = []cvTool{{ToolSpec: spec}}
	tc.ToolChoice = &cvToolChoice{Tool: &struct {
		Name string `json:"name"`
	}{JSONAnswerTool}}
	return JSONAnswerTool, nil
}
