package grammar

import "fmt"

// openAIChat holds a Chat Completions stream to its grammar.
type openAIChat struct {
	done, failed bool
	usage        bool // the usage-only chunk has come
	chunks       int  // chunks with choices
	seen         map[int64]bool
	finished     map[int64]bool
	calls        map[[2]int64]bool // (choice, tool call index) begun
}

// The finish reasons OpenAI documents (function_call: the deprecated
// functions API).
var openAIFinish = map[string]bool{"stop": true, "length": true, "tool_calls": true, "content_filter": true, "function_call": true}

func (c *openAIChat) event(ev Event) *Violation {
	switch {
	case c.done:
		return violate(RuleAfterEnd, "", "an event after data: [DONE], which is the stream's last")
	case c.failed:
		return violate(RuleAfterEnd, "", "an event after the error event, which ends the stream")
	case ev.Named:
		return violate(RuleNoEventField, "", "event: %q field; OpenAI's chat stream names no event, and its Python SDK wraps a named event's data, breaking the chunk", ev.Name)
	case ev.Data == "[DONE]":
		for i := range c.seen {
			if !c.finished[i] {
				return violate(RuleDoneAfterFinish, "[DONE]", "data: [DONE] before choice %d had its finish_reason", i)
			}
		}
		if c.chunks == 0 {
			return violate(RuleDoneAfterFinish, "[DONE]", "data: [DONE] before any chunk with a choice")
		}
		c.done = true
		return nil
	}
	o, err := parseObject(ev.Data)
	if err != nil {
		return violate(RuleJSON, "", "data %s", err)
	}
	if o.has("error") {
		e, ok := o.obj("error")
		if !ok {
			return violate(RuleShape, "error", "error is %s, want an object", o.describe("error"))
		}
		if _, ok := e.str("message"); !ok {
			return violate(RuleShape, "error", "the error has no string message (%s)", e.describe("message"))
		}
		c.failed = true
		return nil
	}
	return c.chunk(o)
}

func (c *openAIChat) chunk(o object) *Violation {
	const typ = "chat.completion.chunk"
	if s, ok := o.str("object"); !ok || s != typ {
		return violate(RuleShape, "", "object is %s, want %q", o.describe("object"), typ)
	}
	if s, ok := o.str("id"); !ok || s == "" {
		return violate(RuleShape, typ, "id is %s, want a string", o.describe("id"))
	}
	if _, ok := o.integer("created"); !ok {
		return violate(RuleShape, typ, "created is %s, want an integer", o.describe("created"))
	}
	if _, ok := o.str("model"); !ok {
		return violate(RuleShape, typ, "model is %s, want a string", o.describe("model"))
	}
	choices, ok := o.arr("choices")
	if !ok {
		return violate(RuleShape, typ, "choices is %s, want an array", o.describe("choices"))
	}
	if len(choices) == 0 {
		if _, ok := o.obj("usage"); !ok {
			return violate(RuleShape, typ, "a chunk with no choices and no usage (usage is %s)", o.describe("usage"))
		}
		for i := range c.seen {
			if !c.finished[i] {
				return violate(RuleUsageChunk, typ, "the usage-only chunk before choice %d had its finish_reason", i)
			}
		}
		if c.chunks == 0 {
			return violate(RuleUsageChunk, typ, "the usage-only chunk before any chunk with a choice")
		}
		c.usage = true
		return nil
	}
	if c.usage {
		return violate(RuleUsageChunk, typ, "a chunk with choices after the usage-only chunk, which only [DONE] follows")
	}
	if c.seen == nil {
		c.seen, c.finished, c.calls = map[int64]bool{}, map[int64]bool{}, map[[2]int64]bool{}
	}
	c.chunks++
	for n, raw := range choices {
		ch, ok := raw.(map[string]any)
		if !ok {
			return violate(RuleShape, typ, "choices[%d] is a %s, want an object", n, kind(raw))
		}
		if v := c.choice(n, ch); v != nil {
			return v
		}
	}
	return nil
}

func (c *openAIChat) choice(n int, ch object) *Violation {
	const typ = "chat.completion.chunk"
	i, ok := ch.integer("index")
	if !ok || i < 0 {
		return violate(RuleShape, typ, "choices[%d].index is %s, want an integer from 0", n, ch.describe("index"))
	}
	delta, ok := ch.obj("delta")
	if !ok {
		return violate(RuleShape, typ, "choice %d: delta is %s, want an object", i, ch.describe("delta"))
	}
	reason, finishes := ch.str("finish_reason")
	if !finishes && ch["finish_reason"] != nil {
		return violate(RuleShape, typ, "choice %d: finish_reason is %s, want a string or null", i, ch.describe("finish_reason"))
	}
	switch {
	case c.finished[i] && finishes:
		return violate(RuleFinishOnce, typ, "choice %d: a second finish_reason %q", i, reason)
	case c.finished[i]:
		return violate(RuleAfterFinish, typ, "choice %d: a chunk after its finish_reason", i)
	case finishes && !openAIFinish[reason]:
		return violate(RuleShape, typ, "choice %d: finish_reason %q is not one of OpenAI's", i, reason)
	}
	c.seen[i] = true
	if r, ok := delta["role"]; ok && r != nil && r != "assistant" {
		return violate(RuleShape, typ, "choice %d: delta.role is %s, want \"assistant\"", i, delta.describe("role"))
	}
	for _, k := range []string{"content", "refusal"} {
		if v, ok := delta[k]; ok && v != nil {
			if _, ok := v.(string); !ok {
				return violate(RuleShape, typ, "choice %d: delta.%s is %s, want a string or null", i, k, delta.describe(k))
			}
		}
	}
	if v := c.toolCalls(i, delta); v != nil {
		return v
	}
	if finishes {
		c.finished[i] = true
	}
	return nil
}

// toolCalls checks a delta's tool_calls: each with its index, and the
// first delta of each call with its id, type and function name.
func (c *openAIChat) toolCalls(i int64, delta object) *Violation {
	const typ = "chat.completion.chunk"
	raw, ok := delta["tool_calls"]
	if !ok || raw == nil {
		return nil
	}
	calls, ok := raw.([]any)
	if !ok {
		return violate(RuleToolCall, typ, "choice %d: delta.tool_calls is a %s, want an array", i, kind(raw))
	}
	for n, rc := range calls {
		tc, ok := rc.(map[string]any)
		if !ok {
			return violate(RuleToolCall, typ, "choice %d: tool_calls[%d] is a %s, want an object", i, n, kind(rc))
		}
		call := object(tc)
		at, ok := call.integer("index")
		if !ok || at < 0 {
			return violate(RuleToolCall, typ, "choice %d: tool_calls[%d].index is %s, want an integer from 0", i, n, call.describe("index"))
		}
		fn, hasFn := call.obj("function")
		if call.has("function") && !hasFn {
			return violate(RuleToolCall, typ, "choice %d: tool call %d: function is %s, want an object", i, at, call.describe("function"))
		}
		if hasFn {
			if a, ok := fn["arguments"]; ok && a != nil {
				if _, ok := a.(string); !ok {
					return violate(RuleToolCall, typ, "choice %d: tool call %d: function.arguments is %s, want a string", i, at, fn.describe("arguments"))
				}
			}
		}
		key := [2]int64{i, at}
		if c.calls[key] {
			continue
		}
		var missing string
		switch id, _ := call.str("id"); {
		case id == "":
			missing = fmt.Sprintf("id (%s)", call.describe("id"))
		case call["type"] != "function":
			missing = fmt.Sprintf("type \"function\" (type is %s)", call.describe("type"))
		case !hasFn:
			missing = "function"
		default:
			if name, _ := fn.str("name"); name == "" {
				missing = fmt.Sprintf("function.name (%s)", fn.describe("name"))
			}
		}
		if missing != "" {
			return violate(RuleToolCall, typ, "choice %d: the first delta of tool call %d has no %s", i, at, missing)
		}
		c.calls[key] = true
	}
	return nil
}

func (c *openAIChat) end() *Violation {
	if c.done || c.failed {
		return nil
	}
	return violate(RuleTerminator, "", "the stream ends without data: [DONE] (or an error event)")
}
