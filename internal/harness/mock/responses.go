package mock

import (
	"encoding/json"
	"net/http"
	"strings"
)

// OpenAI's Responses API (POST /v1/responses): input is a string or a
// list of items, instructions a system prompt, max_output_tokens the
// cap. An answer is one message item with one output_text part; a
// stream sends the events OpenAI's does for that: response.created,
// .in_progress, .output_item.added, .content_part.added, then one
// .output_text.delta per token, then .output_text.done, .content_part.done,
// .output_item.done and response.completed (or response.incomplete when
// max_output_tokens cut it short), each with its sequence_number.

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	s.serveCall(w, r, openAI{}, func(body []byte) (*call, error) {
		var q struct {
			Model           string          `json:"model"`
			Stream          bool            `json:"stream"`
			MaxOutputTokens *int            `json:"max_output_tokens"`
			Input           json.RawMessage `json:"input"`
			Instructions    string          `json:"instructions"`
		}
		if err := json.Unmarshal(body, &q); err != nil {
			return nil, badJSON(err)
		}
		prompt := len(q.Instructions)
		var items []message
		if json.Unmarshal(q.Input, &items) == nil {
			prompt += messagesBytes(items)
		} else {
			prompt += contentBytes(q.Input)
		}
		c := &call{model: q.Model, stream: q.Stream, promptTokens: tokensFor(prompt), prompt: q.Instructions + "\n" + string(q.Input)}
		if q.MaxOutputTokens != nil && *q.MaxOutputTokens > 0 {
			c.maxTokens = *q.MaxOutputTokens
		}
		c.enc = func(p *plan) encoder {
			return &responsesEnc{id: p.id, model: s.modelName(q.Model), created: p.created.Unix(), prompt: c.promptTokens, w: p.sse}
		}
		return c, nil
	})
}

type responsesEnc struct {
	id, model string
	created   int64
	prompt    int
	seq       int
	text      strings.Builder // the streamed text so far
	w         *sseWriter
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

type responseUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type responseObject struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	CreatedAt         int64          `json:"created_at"`
	Status            string         `json:"status"`
	Model             string         `json:"model"`
	Output            []responseItem `json:"output"`
	IncompleteDetails any            `json:"incomplete_details"`
	Usage             *responseUsage `json:"usage"`
}

func (e *responsesEnc) item(status string, text *string) responseItem {
	it := responseItem{Type: "message", ID: "msg_" + e.id, Status: status, Role: "assistant", Content: []responseText{}}
	if text != nil {
		it.Content = append(it.Content, responseText{"output_text", *text, []any{}})
	}
	return it
}

// object is the response; done gives it its output, status and usage.
func (e *responsesEnc) object(done bool, text string, tokens int, capped bool) responseObject {
	o := responseObject{ID: "resp_" + e.id, Object: "response", CreatedAt: e.created, Status: "in_progress", Model: e.model, Output: []responseItem{}}
	if done {
		o.Status = "completed"
		if capped {
			o.Status, o.IncompleteDetails = "incomplete", map[string]string{"reason": "max_output_tokens"}
		}
		o.Output = []responseItem{e.item("completed", &text)}
		o.Usage = &responseUsage{e.prompt, tokens, e.prompt + tokens}
	}
	return o
}

func (e *responsesEnc) body(text string, tokens int, capped bool) []byte {
	b, _ := json.Marshal(e.object(true, text, tokens, capped))
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
	b := e.event("response.created", map[string]any{"response": e.object(false, "", 0, false)})
	b = append(b, e.event("response.in_progress", map[string]any{"response": e.object(false, "", 0, false)})...)
	b = append(b, e.event("response.output_item.added", map[string]any{"output_index": 0, "item": e.item("in_progress", nil)})...)
	return append(b, e.event("response.content_part.added", map[string]any{"item_id": "msg_" + e.id, "output_index": 0, "content_index": 0, "part": e.part("")})...)
}

func (e *responsesEnc) streamToken(tok string) []byte {
	e.text.WriteString(tok)
	return e.event("response.output_text.delta", map[string]any{"item_id": "msg_" + e.id, "output_index": 0, "content_index": 0, "delta": tok})
}

func (e *responsesEnc) streamTail(tokens int, capped bool) []byte {
	text := e.text.String()
	b := e.event("response.output_text.done", map[string]any{"item_id": "msg_" + e.id, "output_index": 0, "content_index": 0, "text": text})
	b = append(b, e.event("response.content_part.done", map[string]any{"item_id": "msg_" + e.id, "output_index": 0, "content_index": 0, "part": e.part(text)})...)
	b = append(b, e.event("response.output_item.done", map[string]any{"output_index": 0, "item": e.item("completed", &text)})...)
	final := "response.completed"
	if capped {
		final = "response.incomplete"
	}
	return append(b, e.event(final, map[string]any{"response": e.object(true, text, tokens, capped)})...)
}

func (e *responsesEnc) ping() []byte { return nil }
