package mock

import (
	"encoding/json"
	"net/http"
	"strings"
)

// OpenAI's Responses API (POST /v1/responses): input is a string or a
// list of items, instructions a system prompt, max_output_tokens the
// cap. The items read are messages (a role and a content, a string or
// parts with text), function_call (the model's earlier call) and
// function_call_output (its result); others, such as reasoning items,
// are skipped.
//
// An answer is a message item with one output_text part, then, when the
// request offers function tools, a function_call item, decided as chat
// decides a call (tools.go): tool_choice none calls nothing, and a
// request whose last input item is a function_call_output calls nothing
// and answers "tool result: " and the output. text.format json_schema
// (or json_object) makes the text JSON valid against the schema, as
// response_format does in chat (structured.go).
//
// A stream sends the events OpenAI's does, each with its
// sequence_number: response.created, .in_progress, .output_item.added
// and .content_part.added for the message, one .output_text.delta per
// token, .output_text.done, .content_part.done, .output_item.done; then,
// for a call, .output_item.added with the function_call item,
// .function_call_arguments.delta per piece of its arguments,
// .function_call_arguments.done and .output_item.done; and last
// response.completed with the whole output and usage (or
// response.incomplete, incomplete_details.reason max_output_tokens, when
// the cap cut the answer short, the item it cut marked incomplete).

// responsesRequest holds the fields of a Responses API request the mock
// reads.
type responsesRequest struct {
	Model              string          `json:"model"`
	Stream             bool            `json:"stream"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	PreviousResponseID string          `json:"previous_response_id"`
	Prompt             json.RawMessage `json:"prompt"`
	Text               *struct {
		Format *responsesFormat `json:"format"`
	} `json:"text"`
	toolRequest
}

// responsesFormat is text.format: the schema sits beside type and name,
// not under json_schema as in chat's response_format.
type responsesFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict *bool           `json:"strict"`
}

// responsesItem is one input item.
type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

// messages is the input as chat messages: a string is the user's turn;
// a function_call is an assistant turn with no text, as a chat call is;
// a function_call_output is a tool turn holding the output.
func (q *responsesRequest) messages() []message {
	var s string
	if json.Unmarshal(q.Input, &s) == nil {
		return []message{{Role: "user", Content: q.Input}}
	}
	var items []responsesItem
	json.Unmarshal(q.Input, &items)
	var msgs []message
	for _, it := range items {
		switch it.Type {
		case "", "message":
			msgs = append(msgs, message{Role: it.Role, Content: it.Content})
		case "function_call":
			msgs = append(msgs, message{Role: "assistant", Content: json.RawMessage("null")})
		case "function_call_output":
			msgs = append(msgs, message{Role: "tool", Content: it.Output})
		}
	}
	return msgs
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	s.serveCall(w, r, openAI{}, func(body []byte) (*call, error) {
		var q responsesRequest
		if err := json.Unmarshal(body, &q); err != nil {
			return nil, badJSON(err)
		}
		if err := q.refusal(); err != nil {
			return nil, err
		}
		msgs := q.messages()
		var system json.RawMessage
		if q.Instructions != "" {
			system, _ = json.Marshal(q.Instructions)
		}
		c := &call{model: q.Model, stream: q.Stream, promptTokens: tokensFor(len(q.Instructions) + messagesBytes(msgs))}
		if q.MaxOutputTokens != nil && *q.MaxOutputTokens > 0 {
			c.maxTokens = *q.MaxOutputTokens
		}
		c.toolTurnOf(msgs, &q.toolRequest)
		if f := q.format(); f != nil {
			switch f.Type {
			case "json_object":
				c.json = "{}"
			case "json_schema":
				c.json = argsFor(f.Schema)
			}
			if c.json != "" {
				c.echo = ""
			}
		}
		c.prompt = promptOf(system, msgs)
		c.enc = func(p *plan) encoder {
			return &responsesEnc{id: p.id, model: s.modelName(q.Model), created: p.created.Unix(), prompt: c.promptTokens, tool: c.tool, w: p.sse}
		}
		return c, nil
	})
}

func (q *responsesRequest) format() *responsesFormat {
	if q.Text == nil {
		return nil
	}
	return q.Text.Format
}

type responsesEnc struct {
	id, model string
	created   int64
	prompt    int
	tool      *toolUse
	seq       int
	// text and args are what the stream has sent so far; called: it has
	// opened the function_call item (toolHead).
	text, args strings.Builder
	called     bool
	w          *sseWriter
}

type responseText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type responseItem struct {
	Type    string         `json:"type"`
	ID      string         `json:"id"`
	Status  string         `json:"status"`
	Role    string         `json:"role"`
	Content []responseText `json:"content"`
}

// responseCall is a function_call output item.
type responseCall struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

type responseObject struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	CreatedAt         int64          `json:"created_at"`
	Status            string         `json:"status"`
	Model             string         `json:"model"`
	Output            []any          `json:"output"`
	IncompleteDetails any            `json:"incomplete_details"`
	Usage             *responseUsage `json:"usage"`
}

func (e *responsesEnc) msgID() string  { return "msg_" + e.id }
func (e *responsesEnc) callID() string { return "fc_" + e.id }

func (e *responsesEnc) item(status string, text *string) responseItem {
	it := responseItem{Type: "message", ID: e.msgID(), Status: status, Role: "assistant", Content: []responseText{}}
	if text != nil {
		it.Content = append(it.Content, e.part(*text))
	}
	return it
}

func (e *responsesEnc) call(status, args string) responseCall {
	return responseCall{Type: "function_call", ID: e.callID(), Status: status, Arguments: args, CallID: "call_" + e.id, Name: e.tool.name}
}

// status is a finished item's: incomplete for the last one when the
// cap cut the answer short.
func status(cut bool) string {
	if cut {
		return "incomplete"
	}
	return "completed"
}

// object is the response; with r it is finished: its output, status and
// usage.
func (e *responsesEnc) object(r *reply) responseObject {
	o := responseObject{ID: "resp_" + e.id, Object: "response", CreatedAt: e.created, Status: "in_progress", Model: e.model, Output: []any{}}
	if r == nil {
		return o
	}
	o.Status = "completed"
	if r.capped {
		o.Status, o.IncompleteDetails = "incomplete", map[string]string{"reason": "max_output_tokens"}
	}
	o.Output = []any{e.item(status(r.capped && r.args == nil), &r.text)}
	if r.args != nil {
		o.Output = append(o.Output, e.call(status(r.capped), *r.args))
	}
	o.Usage = &responseUsage{
		InputTokens: e.prompt, InputTokensDetails: map[string]int{"cached_tokens": 0},
		OutputTokens: r.tokens, OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
		TotalTokens: e.prompt + r.tokens,
	}
	return o
}

func (e *responsesEnc) body(r reply) []byte {
	b, _ := json.Marshal(e.object(&r))
	return b
}

// event is one Responses API event: its type named in an event line and
// leading its data, with the next sequence number.
func (e *responsesEnc) event(typ string, fields map[string]any) []byte {
	fields["sequence_number"] = e.seq
	e.seq++
	b, _ := json.Marshal(fields)
	// "type" first, as OpenAI sends it (encoding/json sorts map keys).
	data := append([]byte(`{"type":"`+typ+`",`), b[1:]...)
	return e.w.raw(typ, data)
}

func (e *responsesEnc) part(text string) responseText {
	return responseText{"output_text", text, []any{}}
}

func (e *responsesEnc) streamHead() []byte {
	b := e.event("response.created", map[string]any{"response": e.object(nil)})
	b = append(b, e.event("response.in_progress", map[string]any{"response": e.object(nil)})...)
	b = append(b, e.event("response.output_item.added", map[string]any{"output_index": 0, "item": e.item("in_progress", nil)})...)
	return append(b, e.event("response.content_part.added", map[string]any{"item_id": e.msgID(), "output_index": 0, "content_index": 0, "part": e.part("")})...)
}

func (e *responsesEnc) streamToken(tok string) []byte {
	e.text.WriteString(tok)
	return e.event("response.output_text.delta", map[string]any{"item_id": e.msgID(), "output_index": 0, "content_index": 0, "delta": tok})
}

// messageDone closes the message item: its text, part and item.
func (e *responsesEnc) messageDone(status string) []byte {
	text := e.text.String()
	b := e.event("response.output_text.done", map[string]any{"item_id": e.msgID(), "output_index": 0, "content_index": 0, "text": text})
	b = append(b, e.event("response.content_part.done", map[string]any{"item_id": e.msgID(), "output_index": 0, "content_index": 0, "part": e.part(text)})...)
	return append(b, e.event("response.output_item.done", map[string]any{"output_index": 0, "item": e.item(status, &text)})...)
}

// toolHead closes the message and adds the function_call item after
// it, its arguments empty; toolToken's deltas carry them.
func (e *responsesEnc) toolHead() []byte {
	e.called = true
	b := e.messageDone("completed")
	return append(b, e.event("response.output_item.added", map[string]any{"output_index": 1, "item": e.call("in_progress", "")})...)
}

func (e *responsesEnc) toolToken(piece string) []byte {
	e.args.WriteString(piece)
	return e.event("response.function_call_arguments.delta", map[string]any{"item_id": e.callID(), "output_index": 1, "delta": piece})
}

func (e *responsesEnc) streamTail(tokens int, capped bool) []byte {
	r := reply{text: e.text.String(), tokens: tokens, capped: capped}
	var b []byte
	if e.called {
		args := e.args.String()
		r.args = &args
		b = e.event("response.function_call_arguments.done", map[string]any{"item_id": e.callID(), "output_index": 1, "arguments": args})
		b = append(b, e.event("response.output_item.done", map[string]any{"output_index": 1, "item": e.call(status(capped), args)})...)
	} else {
		b = e.messageDone(status(capped))
	}
	final := "response.completed"
	if capped {
		final = "response.incomplete"
	}
	return append(b, e.event(final, map[string]any{"response": e.object(&r)})...)
}

func (e *responsesEnc) ping() []byte { return nil }
