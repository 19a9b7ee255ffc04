package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sluice-gw/sluice/internal/model/upstream"
)

// openAI is the OpenAI wire protocol, which vLLM and most gateways share.
type openAI struct{}

func (openAI) errorJSON(status int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg,
		"type":    openAIErrorType(status),
		"param":   nil,
		"code":    nil,
	}})
	return b
}

func (openAI) overloadStatus() int { return upstream.RefusalStatus(false) }

// setHeaders adds OpenAI's request id and rate-limit headers, with numbers
// that move per call, so a gateway's passthrough of them can be tested.
func (openAI) setHeaders(h http.Header, p *plan, c *call) {
	const reqLimit, tokLimit = 10000, 2000000
	h.Set("x-request-id", "req_"+p.id)
	h.Set("x-ratelimit-limit-requests", strconv.Itoa(reqLimit))
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(reqLimit-1-int((p.seq-1)%reqLimit)))
	h.Set("x-ratelimit-reset-requests", "6ms")
	h.Set("x-ratelimit-limit-tokens", strconv.Itoa(tokLimit))
	h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(max(0, tokLimit-c.promptTokens-c.maxTokens)))
	h.Set("x-ratelimit-reset-tokens", "1ms")
}

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func newUsage(prompt, completion int) *openAIUsage {
	return &openAIUsage{prompt, completion, prompt + completion}
}

// finishReason is a chat or completion choice's: length when max_tokens
// cut the answer short, even inside a tool call (whose arguments then
// end mid-JSON), tool_calls when it called a tool, else stop.
func finishReason(called, capped bool) *string {
	r := "stop"
	switch {
	case capped:
		r = "length"
	case called:
		r = "tool_calls"
	}
	return &r
}

// openAIRequest holds the fields both OpenAI generation endpoints read.
type openAIRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
}

func (q *openAIRequest) call(promptBytes int) *call {
	c := &call{model: q.Model, stream: q.Stream, promptTokens: tokensFor(promptBytes)}
	// max_completion_tokens supersedes max_tokens in OpenAI's API.
	for _, m := range []*int{q.MaxCompletionTokens, q.MaxTokens} {
		if m != nil && *m > 0 {
			c.maxTokens = *m
			break
		}
	}
	return c
}

func (q *openAIRequest) includeUsage() bool {
	return q.StreamOptions != nil && q.StreamOptions.IncludeUsage
}

func badJSON(err error) error {
	//lint:ignore ST1005 the wording is OpenAI's own, verbatim
	return fmt.Errorf("We could not parse the JSON body of your request: %v", err)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.serveCall(w, r, openAI{}, func(body []byte) (*call, error) {
		var q struct {
			openAIRequest
			Messages []message `json:"messages"`
		}
		if err := json.Unmarshal(body, &q); err != nil {
			return nil, badJSON(err)
		}
		if err := chatRefusal(body); err != nil {
			return nil, err
		}
		c := q.call(messagesBytes(q.Messages))
		c.toolTurn(body, q.Messages)
		c.structured(body)
		c.setPrompt(nil, q.Messages, openAIContinues(body))
		c.enc = func(p *plan) encoder {
			return &chatEnc{oaiCommon{"chatcmpl-" + p.id, s.modelName(q.Model), p.created.Unix(), c.promptTokens, q.includeUsage(), p.sse}, c.tool, false}
		}
		return c, nil
	})
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	s.serveCall(w, r, openAI{}, func(body []byte) (*call, error) {
		var q struct {
			openAIRequest
			Prompt json.RawMessage `json:"prompt"`
		}
		if err := json.Unmarshal(body, &q); err != nil {
			return nil, badJSON(err)
		}
		c := q.call(promptBytes(q.Prompt))
		c.prompt = string(q.Prompt)
		c.enc = func(p *plan) encoder {
			return &completionEnc{oaiCommon{"cmpl-" + p.id, s.modelName(q.Model), p.created.Unix(), c.promptTokens, q.includeUsage(), p.sse}}
		}
		return c, nil
	})
}

// promptBytes sizes a legacy prompt: a string, a list of strings, or
// token ids, where each id counts as the four bytes of one token.
func promptBytes(raw json.RawMessage) int {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		items = []json.RawMessage{raw}
	}
	n := 0
	for _, item := range items {
		var s string
		var ids []int
		var id int
		switch {
		case json.Unmarshal(item, &s) == nil:
			n += len(s)
		case json.Unmarshal(item, &id) == nil:
			n += 4
		case json.Unmarshal(item, &ids) == nil:
			n += 4 * len(ids)
		}
	}
	return n
}

// modelName echoes the request's model, or names one when it gave none.
func (s *Server) modelName(m string) string {
	if m == "" {
		return s.cfg.Models[0]
	}
	return m
}

type oaiCommon struct {
	id, model    string
	created      int64
	prompt       int
	includeUsage bool
	w            *sseWriter
}

// usageChunk: the stream ends with a usage chunk, because the request
// asked (stream_options.include_usage) or the encoding sends it anyway
// (usagelast), as some compatible servers do.
func (e *oaiCommon) usageChunk() bool { return e.includeUsage || e.w.enc().UsageLast() }

type chatEnc struct {
	oaiCommon
	tool *toolUse
	// called: the stream has opened its tool call (toolHead).
	called bool
}

type chatChoice struct {
	Index        int        `json:"index"`
	Message      *chatDelta `json:"message,omitempty"`
	Delta        *chatDelta `json:"delta,omitempty"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chatDelta struct {
	Role      string           `json:"role,omitempty"`
	Content   *string          `json:"content,omitempty"`
	ToolCalls []openAIToolCall `json:"tool_calls,omitempty"`
}

type chatObject struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             *openAIUsage `json:"usage,omitempty"`
}

func (e *chatEnc) object(kind string, ch chatChoice) chatObject {
	return chatObject{e.id, kind, e.created, e.model, "fp_sluice_mock", []chatChoice{ch}, nil}
}

// toolCall is the answer's call to e.tool with args, for a stream when
// index is set.
func (e *chatEnc) toolCall(index *int, args string) openAIToolCall {
	c := openAIToolCall{Index: index, ID: "call_" + e.id, Type: "function"}
	c.Function.Name, c.Function.Arguments = e.tool.name, args
	return c
}

func (e *chatEnc) body(r reply) []byte {
	msg := &chatDelta{Role: "assistant", Content: &r.text}
	if r.args != nil {
		msg.ToolCalls = []openAIToolCall{e.toolCall(nil, *r.args)}
	}
	o := e.object("chat.completion", chatChoice{Message: msg, FinishReason: finishReason(r.args != nil, r.capped)})
	o.Usage = newUsage(e.prompt, r.tokens)
	b, _ := json.Marshal(o)
	return b
}

// streamHead is the role-only chunk OpenAI sends before any content.
func (e *chatEnc) streamHead() []byte {
	empty := ""
	return e.w.data(e.object("chat.completion.chunk", chatChoice{Delta: &chatDelta{Role: "assistant", Content: &empty}}))
}

func (e *chatEnc) streamToken(tok string) []byte {
	return e.w.data(e.object("chat.completion.chunk", chatChoice{Delta: &chatDelta{Content: &tok}}))
}

// toolHead is the call's first chunk, as OpenAI streams one: its index,
// id, type and name, with empty arguments; toolToken's chunks carry the
// arguments, under the index alone.
func (e *chatEnc) toolHead() []byte {
	e.called = true
	return e.w.data(e.object("chat.completion.chunk", chatChoice{Delta: &chatDelta{ToolCalls: []openAIToolCall{e.toolCall(new(int), "")}}}))
}

func (e *chatEnc) toolToken(piece string) []byte {
	more := openAIToolCall{Index: new(int)}
	more.Function.Arguments = piece
	return e.w.data(e.object("chat.completion.chunk", chatChoice{Delta: &chatDelta{ToolCalls: []openAIToolCall{more}}}))
}

func (e *chatEnc) streamTail(tokens int, capped bool) []byte {
	b := e.w.data(e.object("chat.completion.chunk", chatChoice{Delta: &chatDelta{}, FinishReason: finishReason(e.called, capped)}))
	if e.usageChunk() {
		// The extra chunk stream_options.include_usage asks for.
		u := e.object("chat.completion.chunk", chatChoice{})
		u.Choices, u.Usage = []chatChoice{}, newUsage(e.prompt, tokens)
		b = append(b, e.w.data(u)...)
	}
	return append(b, e.w.done()...)
}

type completionEnc struct{ oaiCommon }

type completionObject struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *openAIUsage       `json:"usage,omitempty"`
}

type completionChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

func (e *completionEnc) object(text string, finish *string) completionObject {
	return completionObject{e.id, "text_completion", e.created, e.model, []completionChoice{{Text: text, FinishReason: finish}}, nil}
}

func (e *completionEnc) body(r reply) []byte {
	o := e.object(r.text, finishReason(false, r.capped))
	o.Usage = newUsage(e.prompt, r.tokens)
	b, _ := json.Marshal(o)
	return b
}

func (e *completionEnc) streamHead() []byte { return nil }

func (e *completionEnc) streamToken(tok string) []byte { return e.w.data(e.object(tok, nil)) }

// The legacy completions API has no tools.
func (e *completionEnc) toolHead() []byte        { return nil }
func (e *completionEnc) toolToken(string) []byte { return nil }

func (e *completionEnc) streamTail(tokens int, capped bool) []byte {
	b := e.w.data(e.object("", finishReason(false, capped)))
	if e.usageChunk() {
		u := e.object("", nil)
		u.Choices, u.Usage = []completionChoice{}, newUsage(e.prompt, tokens)
		b = append(b, e.w.data(u)...)
	}
	return append(b, e.w.done()...)
}

// OpenAI's APIs have no ping event: a stall's keepalives are comments.
func (e *oaiCommon) ping() []byte { return nil }
