package mock

import (
	"encoding/json"
	"strings"
)

// Tools. A request that offers tools gets an answer that calls one, so a
// client's whole tool round trip can run against the mock: the model
// calls a tool, the client runs it and sends its result back, the model
// answers. The rules, the same in every API:
//
//   - the last message is a tool result (an OpenAI "tool" message, an
//     Anthropic user turn holding a tool_result block, or a Responses
//     function_call_output item): no tool is
//     called, and the answer's text starts with "tool result: " and the
//     result's text, so a test sees that the result arrived;
//   - otherwise, when tools are offered and tool_choice is not none: the
//     answer's generated text is followed by a call to the tool
//     tool_choice names, or else the first function offered, and the
//     finish reason is tool_calls (OpenAI) or tool_use (Anthropic). Its
//     arguments fill
//     the schema: a value it accepts (schemavalue.go);
//   - the call's arguments cost tokens, eight bytes each, as a JSON
//     answer's text does. max_tokens inside the text ends the answer
//     there with no call; inside the arguments it ends the answer with
//     the call cut short (gen.fit): OpenAI's finish_reason length with
//     arguments that are not valid JSON, Anthropic's stop_reason
//     max_tokens with the input as far as it got, the Responses API's
//     incomplete response with an incomplete function_call item.

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

// toolDef is one offered tool: OpenAI's chat nests it under function,
// with parameters; its Responses API has name and parameters at the
// top; Anthropic has name and input_schema there.
type toolDef struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
	Function    *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (d toolDef) nameSchema() (string, json.RawMessage) {
	switch {
	case d.Function != nil:
		return d.Function.Name, d.Function.Parameters
	case d.InputSchema != nil:
		return d.Name, d.InputSchema
	}
	return d.Name, d.Parameters
}

// callable says the mock can call d: a function (a custom tool, in
// Anthropic's words), not one of a vendor's built-in tools (web search,
// bash, a computer), whose calls are of other kinds.
func (d toolDef) callable() bool {
	return d.Type == "" || d.Type == "function" || d.Type == "custom"
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
		if !d.callable() {
			continue
		}
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
	var q toolRequest
	if json.Unmarshal(body, &q) != nil {
		q = toolRequest{}
	}
	c.toolTurnOf(msgs, &q)
}

// toolTurnOf is toolTurn of tools already read.
func (c *call) toolTurnOf(msgs []message, q *toolRequest) {
	if res, ok := toolResult(msgs); ok {
		c.echo = "tool result: " + res
		return
	}
	c.tool = q.pick()
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

// partialObject is what a tool call's arguments hold whole when they
// were cut after sent, a prefix of full: the object of full's top-level
// members that end within sent, {} when none does (or full is not an
// object). It is valid JSON, unlike sent.
func partialObject(full, sent string) string {
	dec := json.NewDecoder(strings.NewReader(full))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "{}"
	}
	end := -1
	for dec.More() {
		var v json.RawMessage
		if _, err := dec.Token(); err != nil { // the member's name
			break
		}
		if err := dec.Decode(&v); err != nil || int(dec.InputOffset()) > len(sent) {
			break
		}
		end = int(dec.InputOffset())
	}
	if end < 0 {
		return "{}"
	}
	return full[:end] + "}"
}
