package mock

import (
	"encoding/json"
)

// Tools. A request that offers tools gets an answer that calls one, so a
// client's whole tool round trip can run against the mock: the model
// calls a tool, the client runs it and sends its result back, the model
// answers. The rules, the same in both APIs:
//
//   - the last message is a tool result (an OpenAI "tool" message, or an
//     Anthropic user turn holding a tool_result block): no tool is
//     called, and the answer's text starts with "tool result: " and the
//     result's text, so a test sees that the result arrived;
//   - otherwise, when tools are offered and tool_choice is not none: the
//     answer's generated text is followed by a call to the tool
//     tool_choice names, or else the first one, and the finish reason is
//     tool_calls (OpenAI) or tool_use (Anthropic). Its arguments fill
//     every property of the tool's schema: strings "mock", numbers 1,
//     booleans true, anything else null;
//   - an answer cut short by max_tokens calls no tool.

// toolUse is the call an answer makes.
type toolUse struct {
	name string
	args string // a JSON object
}

// toolRequest holds what a request says about tools, in either API.
type toolRequest struct {
	Tools      []toolDef       `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// toolDef is one offered tool: OpenAI nests it under function, with
// parameters; Anthropic has name and input_schema at the top.
type toolDef struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
	Function    *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (d toolDef) nameSchema() (string, json.RawMessage) {
	if d.Function != nil {
		return d.Function.Name, d.Function.Parameters
	}
	return d.Name, d.InputSchema
}

// pick is the tool an answer calls, or nil.
func (q *toolRequest) pick() *toolUse {
	if len(q.Tools) == 0 {
		return nil
	}
	var choice struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	var s string
	want := ""
	switch {
	case json.Unmarshal(q.ToolChoice, &s) == nil:
		if s == "none" {
			return nil
		}
	case json.Unmarshal(q.ToolChoice, &choice) == nil:
		if choice.Type == "none" {
			return nil
		}
		want = choice.Name + choice.Function.Name
	}
	for _, d := range q.Tools {
		if name, schema := d.nameSchema(); want == "" || name == want {
			return &toolUse{name: name, args: argsFor(schema)}
		}
	}
	return nil
}

// toolResult is the text of the tool result a message list ends with,
// and whether it ends with one.
func toolResult(msgs []message) (string, bool) {
	if len(msgs) == 0 {
		return "", false
	}
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		return contentText(last.Content), true
	}
	if last.Role != "user" {
		return "", false
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(last.Content, &blocks) != nil {
		return "", false
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			return contentText(b.Content), true
		}
	}
	return "", false
}

// contentText joins the text of a content: a string, or parts with text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	for _, p := range parts {
		s += p.Text
	}
	return s
}

// toolTurn reads a request's tools and messages into c: the tool its
// answer calls, or the tool result its answer starts with.
func (c *call) toolTurn(body []byte, msgs []message) {
	if res, ok := toolResult(msgs); ok {
		c.echo = "tool result: " + res
		return
	}
	var q toolRequest
	if json.Unmarshal(body, &q) == nil {
		c.tool = q.pick()
	}
}

// openAIToolCall is a tool call in a chat answer (index set) or stream.
type openAIToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// toolUseBlock is an Anthropic tool_use content block.
type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// jsonDelta is an Anthropic input_json_delta.
type jsonDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}
