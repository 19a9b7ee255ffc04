package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/model/upstream"
)

// anthropic is the Anthropic Messages API wire protocol.
type anthropic struct{}

func (anthropic) errorJSON(status int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": anthropicErrorType(status), "message": msg},
	})
	return b
}

func (anthropic) overloadStatus() int { return upstream.RefusalStatus(true) }

func (anthropic) setHeaders(h http.Header, p *plan, c *call) {
	const reqLimit, tokLimit = 4000, 400000
	h.Set("request-id", "req_"+p.id)
	h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(reqLimit))
	h.Set("anthropic-ratelimit-requests-remaining", strconv.Itoa(reqLimit-1-int((p.seq-1)%reqLimit)))
	h.Set("anthropic-ratelimit-tokens-limit", strconv.Itoa(tokLimit))
	h.Set("anthropic-ratelimit-tokens-remaining", strconv.Itoa(max(0, tokLimit-c.promptTokens-c.maxTokens)))
}

type messagesRequest struct {
	Model     string          `json:"model"`
	Messages  []message       `json:"messages"`
	System    json.RawMessage `json:"system"`
	MaxTokens *int            `json:"max_tokens"`
	Stream    bool            `json:"stream"`
}

func parseMessages(body []byte) (*messagesRequest, int, error) {
	var q messagesRequest
	if err := json.Unmarshal(body, &q); err != nil {
		return nil, 0, fmt.Errorf("invalid JSON body: %v", err)
	}
	return &q, tokensFor(messagesBytes(q.Messages) + contentBytes(q.System)), nil
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	// A native API's call (Gemini, Converse) comes as the Messages
	// request its Server made of it: the vendor played is that API,
	// whose own refusals are its Server's, so Anthropic's are not
	// checked (Gemini takes a schema without additionalProperties).
	_, native := r.Context().Value(vendorPath{}).(string)
	s.serveCall(w, r, anthropic{}, func(body []byte) (*call, error) {
		q, prompt, err := parseMessages(body)
		if err != nil {
			return nil, err
		}
		if !native {
			if err := messagesRefusal(body); err != nil {
				return nil, err
			}
		}
		c := &call{model: q.Model, stream: q.Stream, promptTokens: prompt}
		if q.MaxTokens != nil && *q.MaxTokens > 0 {
			c.maxTokens = *q.MaxTokens
		}
		c.toolTurn(body, q.Messages)
		c.structured(body)
		c.setPrompt(q.System, q.Messages, true)
		c.enc = func(p *plan) encoder {
			e := &messagesEnc{id: "msg_" + p.id, model: s.modelName(q.Model), prompt: prompt, tool: c.tool, thinking: c.thinking, w: p.sse}
			if e.thinking {
				e.text = 1
			}
			return e
		}
		return c, nil
	})
}

// handleCountTokens serves /v1/messages/count_tokens with the same
// estimate the usage figures use. It is not a generation call: no latency,
// no failures, not counted in Stats.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	body, err := readAll(w, r)
	if err != nil {
		s.record(r, body, "")
		writeJSON(w, http.StatusBadRequest, anthropic{}.errorJSON(http.StatusBadRequest, err.Error()))
		return
	}
	q, prompt, err := parseMessages(body)
	if err != nil {
		s.record(r, body, "")
		writeJSON(w, http.StatusBadRequest, anthropic{}.errorJSON(http.StatusBadRequest, err.Error()))
		return
	}
	s.record(r, body, q.Model)
	b, _ := json.Marshal(map[string]int{"input_tokens": prompt})
	writeJSON(w, http.StatusOK, b)
}

type messagesEnc struct {
	id, model string
	prompt    int
	tool      *toolUse
	// thinking: a thinking block comes first, and the text block's
	// index is text (1; else 0).
	thinking bool
	text     int
	// called: the stream has opened its tool_use block (toolHead),
	// after the text block.
	called bool
	// w writes the events; the type is repeated in an event line (unless
	// the encoding drops them), which some clients dispatch on.
	w *sseWriter
}

func (e *messagesEnc) toolBlock(input string) toolUseBlock {
	return toolUseBlock{Type: "tool_use", ID: "toolu_" + strings.TrimPrefix(e.id, "msg_"), Name: e.tool.name, Input: json.RawMessage(input)}
}

// stopReason is a message's: max_tokens when the cap cut it short, even
// inside a tool_use block, tool_use when it called a tool, else end_turn.
func stopReason(called, capped bool) string {
	switch {
	case capped:
		return "max_tokens"
	case called:
		return "tool_use"
	}
	return "end_turn"
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type messageObject struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []any          `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

// body is the whole message. A tool_use block that max_tokens cut short
// holds, as its input, the members of the arguments that were whole
// when the cap came (partialObject): the API's input is always an
// object, and it documents no more of a cut call than that the block is
// incomplete and stop_reason is max_tokens.
func (e *messagesEnc) body(r reply) []byte {
	reason := stopReason(r.args != nil, r.capped)
	content := []any{textBlock{"text", r.text}}
	if e.thinking {
		content = []any{thinkingBlock{"thinking", mockThinking, mockSignature}, content[0]}
	}
	if r.args != nil {
		// A fault may cut the arguments too, uncapped; the body stays
		// JSON, to be cut where the fault says.
		input := *r.args
		if r.capped || !json.Valid([]byte(input)) {
			input = partialObject(e.tool.args, input)
		}
		content = append(content, e.toolBlock(input))
	}
	b, _ := json.Marshal(messageObject{
		ID: e.id, Type: "message", Role: "assistant", Model: e.model,
		Content:    content,
		StopReason: &reason,
		Usage:      anthropicUsage{e.prompt, r.tokens},
	})
	return b
}

// blockEvent is a content_block_* event; type leads, as in Anthropic's.
type blockEvent struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock any    `json:"content_block,omitempty"`
	Delta        any    `json:"delta,omitempty"`
}

func (e *messagesEnc) streamHead() []byte {
	b := e.w.event("message_start", struct {
		Type    string        `json:"type"`
		Message messageObject `json:"message"`
	}{"message_start", messageObject{
		ID: e.id, Type: "message", Role: "assistant", Model: e.model,
		Content: []any{},
		Usage:   anthropicUsage{e.prompt, 1},
	}})
	if e.thinking {
		b = append(b, e.w.event("content_block_start", blockEvent{Type: "content_block_start", ContentBlock: &thinkingBlock{Type: "thinking"}})...)
		b = append(b, e.w.event("content_block_delta", blockEvent{Type: "content_block_delta", Delta: map[string]string{"type": "thinking_delta", "thinking": mockThinking}})...)
		b = append(b, e.w.event("content_block_delta", blockEvent{Type: "content_block_delta", Delta: map[string]string{"type": "signature_delta", "signature": mockSignature}})...)
		b = append(b, e.w.event("content_block_stop", blockEvent{Type: "content_block_stop"})...)
	}
	b = append(b, e.w.event("content_block_start", blockEvent{Type: "content_block_start", Index: e.text, ContentBlock: &textBlock{"text", ""}})...)
	if e.w.enc().NoPing() {
		return b
	}
	return append(b, e.ping()...)
}

// ping is Anthropic's ping event, sent after the head and, with the
// pings encoding, while a stream stalls.
func (e *messagesEnc) ping() []byte {
	return e.w.event("ping", map[string]string{"type": "ping"})
}

func (e *messagesEnc) streamToken(tok string) []byte {
	return e.w.event("content_block_delta", blockEvent{Type: "content_block_delta", Index: e.text, Delta: &textBlock{"text_delta", tok}})
}

// toolHead ends the text block and starts the tool_use block after it,
// its input {}; toolToken's input_json_delta events carry the input's
// JSON, piece by piece, as Anthropic streams it.
func (e *messagesEnc) toolHead() []byte {
	e.called = true
	b := e.w.event("content_block_stop", blockEvent{Type: "content_block_stop", Index: e.text})
	return append(b, e.w.event("content_block_start", blockEvent{Type: "content_block_start", Index: e.text + 1, ContentBlock: e.toolBlock("{}")})...)
}

func (e *messagesEnc) toolToken(piece string) []byte {
	return e.w.event("content_block_delta", blockEvent{Type: "content_block_delta", Index: e.text + 1, Delta: jsonDelta{"input_json_delta", piece}})
}

func (e *messagesEnc) streamTail(tokens int, capped bool) []byte {
	type delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	type usage struct {
		OutputTokens int `json:"output_tokens"`
	}
	open := e.text
	if e.called {
		open++
	}
	b := e.w.event("content_block_stop", blockEvent{Type: "content_block_stop", Index: open})
	b = append(b, e.w.event("message_delta", struct {
		Type  string `json:"type"`
		Delta delta  `json:"delta"`
		Usage usage  `json:"usage"`
	}{"message_delta", delta{StopReason: stopReason(e.called, capped)}, usage{tokens}})...)
	return append(b, e.w.end("message_stop", map[string]string{"type": "message_stop"})...)
}
