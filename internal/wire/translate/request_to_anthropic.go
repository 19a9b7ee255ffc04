package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// RequestToAnthropic translates an OpenAI /v1/chat/completions body into
// an Anthropic /v1/messages body. It fails with an *Error (ErrInvalid or
// ErrUntranslatable) naming the first parameter it cannot carry, unless
// opts.Drop lets it go. Parameters at their default (n: 1, logprobs:
// false, presence_penalty: 0, response_format text, ...) ask for nothing
// and are left out without a word.
func RequestToAnthropic(body []byte, opts Options) (*Translated, error) {
	c := &conv{opts: opts, Bender: NewBender(opts)}
	o, model, err := parseRequest(body)
	if err != nil {
		return nil, err
	}
	out := anRequest{Model: model}

	if err := c.openAIDefaultsOnly(o); err != nil {
		return nil, err
	}
	if err := c.maxTokensToAnthropic(o, &out); err != nil {
		return nil, err
	}
	if err := c.samplingToAnthropic(o, &out); err != nil {
		return nil, err
	}
	res := &Translated{}
	if res.Stream, _, err = getBool(o, "stream"); err != nil {
		return nil, err
	}
	out.Stream = res.Stream
	if so := o.get("stream_options"); so != nil {
		sob, err := parseObject(so, "stream_options")
		if err != nil {
			return nil, err
		}
		if res.IncludeUsage, _, err = getBool(sob, "include_usage"); err != nil {
			return nil, err
		}
		if err := sob.refuseUnused(c, "Anthropic"); err != nil {
			return nil, err
		}
	}
	if user, ok, err := getString(o, "user"); err != nil {
		return nil, err
	} else if ok {
		out.Metadata = &anMetadata{UserID: user}
	}
	if err := c.toolsToAnthropic(o, &out); err != nil {
		return nil, err
	}
	if err := c.responseFormatToAnthropic(o, &out); err != nil {
		return nil, err
	}
	if err := c.reasoningToAnthropic(o, &out); err != nil {
		return nil, err
	}
	msgs := o.get("messages")
	if msgs == nil {
		return nil, invalid("messages", "messages", "is required")
	}
	// The body is written as it is read, into one buffer sized from the
	// source: the head, then the system prompt and the messages, then
	// the rest.
	var b bytes.Buffer
	b.Grow(len(body) + 256)
	out.encodeHead(&b)
	if err := c.messagesToAnthropic(msgs, &b); err != nil {
		return nil, err
	}
	if err := o.refuseUnused(c, "Anthropic"); err != nil {
		return nil, err
	}
	if err := out.encodeTail(&b); err != nil {
		return nil, err
	}
	res.Body = b.Bytes()
	res.Dropped = c.Dropped()
	return res, nil
}

// openAIDefaultsOnly takes the parameters Anthropic has no form for: at
// their default they ask for nothing; otherwise they are refused.
func (c *conv) openAIDefaultsOnly(o *object) error {
	checks := []struct {
		key       string
		isDefault func(json.RawMessage) bool
		why       string
	}{
		{"n", isJSON("1"), "Anthropic returns one choice per request"},
		{"logprobs", isJSON("false"), "Anthropic does not return log probabilities"},
		{"top_logprobs", isJSON("0"), "Anthropic does not return log probabilities"},
		{"logit_bias", isEmptyObject, "Anthropic has no logit bias"},
		{"presence_penalty", isZero, "Anthropic has no presence penalty"},
		{"frequency_penalty", isZero, "Anthropic has no frequency penalty"},
		{"seed", never, "Anthropic has no seed for reproducible sampling"},
		{"service_tier", isJSON(`"auto"`), "OpenAI's service tiers do not map to Anthropic's"},
		{"store", isJSON("false"), "Anthropic does not store completions"},
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

func isJSON(want string) func(json.RawMessage) bool {
	return func(v json.RawMessage) bool {
		var a, b any
		return json.Unmarshal(v, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && a == b
	}
}

func isZero(v json.RawMessage) bool {
	var f float64
	return json.Unmarshal(v, &f) == nil && f == 0
}

func never(json.RawMessage) bool { return false }

func (c *conv) maxTokensToAnthropic(o *object, out *anRequest) error {
	mt, hasMT, err := getInt(o, "max_tokens")
	if err != nil {
		return err
	}
	mct, hasMCT, err := getInt(o, "max_completion_tokens")
	if err != nil {
		return err
	}
	switch {
	case hasMT && hasMCT && mt != mct:
		return invalid("max_tokens", "max_tokens", "conflicts with max_completion_tokens; set one")
	case hasMCT:
		out.MaxTokens = mct
	case hasMT:
		out.MaxTokens = mt
	case c.opts.DefaultMaxTokens > 0:
		out.MaxTokens, c.maxDefaulted = c.opts.DefaultMaxTokens, true
	default:
		out.MaxTokens, c.maxDefaulted = DefaultMaxTokens, true
	}
	return nil
}

func (c *conv) samplingToAnthropic(o *object, out *anRequest) error {
	t, traw, err := getNumber(o, "temperature")
	if err != nil {
		return err
	}
	// OpenAI's scale runs to 2, Anthropic's to 1. The scales are not the
	// same curve, so neither clamping nor halving keeps the client's
	// meaning; above 1 is refused.
	if traw != nil && t > 1 {
		if err := c.refuse("temperature", "temperature", "Anthropic's temperature runs from 0 to 1; above 1 has no equivalent"); err != nil {
			return err
		}
		traw = nil
	}
	out.Temperature = traw
	if _, out.TopP, err = getNumber(o, "top_p"); err != nil {
		return err
	}
	stop := o.get("stop")
	if stop == nil {
		return nil
	}
	var seqs []string
	if isString(stop) {
		var s string
		if err := json.Unmarshal(stop, &s); err != nil {
			return invalid("stop", "stop", "must be a string or an array of strings")
		}
		seqs = []string{s}
	} else if err := json.Unmarshal(stop, &seqs); err != nil {
		return invalid("stop", "stop", "must be a string or an array of strings")
	}
	for _, s := range seqs {
		if strings.TrimSpace(s) == "" {
			if err := c.refuse("stop", "stop", "Anthropic refuses stop sequences that are empty or only whitespace"); err != nil {
				return err
			}
			return nil
		}
	}
	out.StopSequences = seqs
	return nil
}

func (c *conv) toolsToAnthropic(o *object, out *anRequest) error {
	if tools := o.get("tools"); tools != nil {
		if isArray(tools) {
			out.Tools = make([]anTool, 0, elementCount(bytes.TrimSpace(tools)))
		}
		if err := c.eachTool(tools, out); err != nil {
			return err
		}
	}
	return c.toolChoiceToAnthropic(o, out)
}

// eachTool adds each function tool of tools to out.Tools.
func (c *conv) eachTool(tools json.RawMessage, out *anRequest) error {
	to, fo := &object{}, &object{} // one each for every tool
	return eachElement(tools, "tools", func(i int, raw json.RawMessage) error {
		if err := to.parseAt(raw, "tools", i); err != nil {
			return err
		}
		typ, _, err := getString(to, "type")
		if err != nil {
			return err
		}
		if typ != "function" {
			return c.refuse("tools.type", to.at("type"), "only function tools translate; "+quote(typ)+" has no Anthropic equivalent")
		}
		fn := to.get("function")
		if fn == nil {
			return invalid("tools.function", to.at("function"), "is required")
		}
		if err := fo.parse(fn, to.at("function")); err != nil {
			return err
		}
		var t anTool
		if t.Name, err = getRequired(fo, "name", "tools.function.name"); err != nil {
			return err
		}
		if t.Description, _, err = getString(fo, "description"); err != nil {
			return err
		}
		t.InputSchema = fo.get("parameters")
		if t.InputSchema == nil {
			t.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		// strict is Anthropic's strict tool use: inputs held to the
		// schema, whose objects must then be closed (closedschema.go).
		if t.Strict, _, err = getBool(fo, "strict"); err != nil {
			return err
		}
		if t.Strict {
			closed, err := closeSchema(t.InputSchema, fo.at("parameters"))
			if te, ok := errors.AsType[*Error](err); ok && te.Kind == ErrUntranslatable {
				// Without strict the tool takes the schema as it is.
				closed, t.Strict, err = t.InputSchema, false, c.refuse("tools.function.strict", fo.at("strict"), te.Reason+" (at "+te.Path+")")
			}
			if err != nil {
				return err
			}
			t.InputSchema = closed
		}
		if err := fo.refuseUnused(c, "Anthropic"); err != nil {
			return err
		}
		if err := to.refuseUnused(c, "Anthropic"); err != nil {
			return err
		}
		out.Tools = append(out.Tools, t)
		return nil
	})
}

func (c *conv) toolChoiceToAnthropic(o *object, out *anRequest) error {
	parallel, hasParallel, err := getBool(o, "parallel_tool_calls")
	if err != nil {
		return err
	}
	if raw := o.get("tool_choice"); raw != nil {
		if isString(raw) {
			var s string
			_ = json.Unmarshal(raw, &s)
			switch s {
			case "auto":
				out.ToolChoice = &anToolChoice{Type: "auto"}
			case "none":
				out.ToolChoice = &anToolChoice{Type: "none"}
			case "required":
				out.ToolChoice = &anToolChoice{Type: "any"}
			default:
				return invalid("tool_choice", "tool_choice", "must be auto, none, required or a function")
			}
		} else {
			tc, err := parseObject(raw, "tool_choice")
			if err != nil {
				return err
			}
			typ, _, err := getString(tc, "type")
			if err != nil {
				return err
			}
			if typ != "function" {
				if err := c.refuse("tool_choice", "tool_choice.type", quote(typ)+" has no Anthropic equivalent"); err != nil {
					return err
				}
				return nil
			}
			fo, err := parseObject(tc.get("function"), "tool_choice.function")
			if err != nil {
				return err
			}
			name, err := getRequired(fo, "name", "tool_choice.function.name")
			if err != nil {
				return err
			}
			if err := fo.refuseUnused(c, "Anthropic"); err != nil {
				return err
			}
			if err := tc.refuseUnused(c, "Anthropic"); err != nil {
				return err
			}
			out.ToolChoice = &anToolChoice{Type: "tool", Name: name}
		}
	}
	// parallel_tool_calls: false is Anthropic's disable_parallel_tool_use,
	// which lives on tool_choice; without tools it asks for nothing.
	if hasParallel && !parallel && len(out.Tools) > 0 {
		if out.ToolChoice == nil {
			out.ToolChoice = &anToolChoice{Type: "auto"}
		}
		if out.ToolChoice.Type != "none" {
			out.ToolChoice.DisableParallelToolUse = true
		}
	}
	return nil
}

func quote(s string) string { return `"` + s + `"` }

// parseRequest reads a request body of either dialect as an object and
// takes its model, which both require.
func parseRequest(body []byte) (*object, string, error) {
	o, err := parseObject(body, "")
	if err != nil {
		return nil, "", err
	}
	model, ok, err := getString(o, "model")
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", invalid("model", "model", "is required")
	}
	return o, model, nil
}
