package bedrock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// server is the mock's side: Converse in, the hub behind.
type server struct{}

// Match reads "/model/{modelId}/converse" and "/model/{modelId}/converse-stream".
func (server) Match(rawPath, _ string) (model string, stream, ok bool) {
	rest, found := strings.CutPrefix(rawPath, "/model/")
	if !found {
		return "", false, false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", false, false
	}
	switch rest[i+1:] {
	case "converse":
	case "converse-stream":
		stream = true
	default:
		return "", false, false
	}
	model, err := url.PathUnescape(rest[:i])
	if err != nil || model == "" {
		return "", false, false
	}
	return model, stream, true
}

func (server) StreamContentType() string { return "application/vnd.amazon.eventstream" }

// hub request shapes the mock's Anthropic handler reads.
type hubRequest struct {
	Model         string          `json:"model"`
	Stream        bool            `json:"stream,omitempty"`
	MaxTokens     int64           `json:"max_tokens"`
	System        string          `json:"system,omitempty"`
	Messages      []hubMessage    `json:"messages"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          json.RawMessage `json:"top_k,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Tools         []hubTool       `json:"tools,omitempty"`
	ToolChoice    map[string]any  `json:"tool_choice,omitempty"`
	Thinking      json.RawMessage `json:"thinking,omitempty"`
}

type hubMessage struct {
	Role    string  `json:"role"`
	Content []hubIn `json:"content"`
}

// hubIn is a hub content block in a request.
type hubIn struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Source    *hubSource      `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []hubIn         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Data      *string         `json:"data,omitempty"`
}

type hubSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type hubTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// defaultMaxTokens is the hub's max_tokens when a Converse request sets
// no maxTokens (Converse does not require one; the hub does).
const defaultMaxTokens = 4096

// HubRequest turns a Converse request into a hub request.
func (server) HubRequest(model string, stream bool, body []byte) ([]byte, error) {
	var cv cvRequest
	if err := json.Unmarshal(body, &cv); err != nil {
		return nil, fmt.Errorf("the request body is not Converse's JSON: %v", err)
	}
	if len(cv.Messages) == 0 {
		return nil, errors.New("messages: at least one message is required")
	}
	hr := hubRequest{Model: model, Stream: stream, MaxTokens: defaultMaxTokens, Messages: []hubMessage{}}
	var sys []string
	for _, s := range cv.System {
		sys = append(sys, s.Text)
	}
	hr.System = strings.Join(sys, "\n\n")
	if ic := cv.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil {
			hr.MaxTokens = *ic.MaxTokens
		}
		hr.Temperature, hr.TopP, hr.StopSequences = ic.Temperature, ic.TopP, ic.StopSequences
	}
	for k, v := range cv.AdditionalModelRequestFields {
		raw, _ := json.Marshal(v)
		switch k {
		case "top_k":
			hr.TopK = raw
		case "thinking":
			hr.Thinking = raw
		}
	}
	for i, m := range cv.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Errorf("messages[%d].role must be user or assistant", i)
		}
		hm := hubMessage{Role: m.Role, Content: []hubIn{}}
		for j, b := range m.Content {
			in, err := hubBlockIn(b)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].content[%d]: %v", i, j, err)
			}
			hm.Content = append(hm.Content, in)
		}
		hr.Messages = append(hr.Messages, hm)
	}
	if tc := cv.ToolConfig; tc != nil {
		for i, t := range tc.Tools {
			if t.ToolSpec == nil || t.ToolSpec.Name == "" {
				return nil, fmt.Errorf("toolConfig.tools[%d] has no toolSpec name", i)
			}
			schema := t.ToolSpec.InputSchema.JSON
			if isNull(schema) {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			hr.Tools = append(hr.Tools, hubTool{Name: t.ToolSpec.Name, Description: t.ToolSpec.Description, InputSchema: schema})
		}
		switch c := tc.ToolChoice; {
		case c == nil:
		case c.Auto != nil:
			hr.ToolChoice = map[string]any{"type": "auto"}
		case c.Any != nil:
			hr.ToolChoice = map[string]any{"type": "any"}
		case c.Tool != nil:
			hr.ToolChoice = map[string]any{"type": "tool", "name": c.Tool.Name}
		}
	}
	return json.Marshal(&hr)
}

// mediaTypes: Converse's image formats as the hub's media types.
var mediaTypes = map[string]string{"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}

func hubBlockIn(b cvBlock) (hubIn, error) {
	switch {
	case b.Text != nil:
		return hubIn{Type: "text", Text: b.Text}, nil
	case b.Image != nil:
		mt, ok := mediaTypes[b.Image.Format]
		if !ok {
			return hubIn{}, fmt.Errorf("image format %q", b.Image.Format)
		}
		return hubIn{Type: "image", Source: &hubSource{Type: "base64", MediaType: mt, Data: b.Image.Source.Bytes}}, nil
	case b.ToolUse != nil:
		input := b.ToolUse.Input
		if isNull(input) {
			input = json.RawMessage(`{}`)
		}
		return hubIn{Type: "tool_use", ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Input: input}, nil
	case b.ToolResult != nil:
		in := hubIn{Type: "tool_result", ToolUseID: b.ToolResult.ToolUseID, IsError: b.ToolResult.Status == "error", Content: []hubIn{}}
		for _, c := range b.ToolResult.Content {
			switch {
			case c.JSON != nil:
				text := string(c.JSON)
				in.Content = append(in.Content, hubIn{Type: "text", Text: &text})
			default:
				sub, err := hubBlockIn(c)
				if err != nil {
					return hubIn{}, err
				}
				in.Content = append(in.Content, sub)
			}
		}
		return in, nil
	case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
		rt := b.ReasoningContent.ReasoningText
		return hubIn{Type: "thinking", Thinking: &rt.Text, Signature: &rt.Signature}, nil
	case b.ReasoningContent != nil:
		data := b.ReasoningContent.RedactedContent
		return hubIn{Type: "redacted_thinking", Data: &data}, nil
	}
	return hubIn{}, errors.New("a content block of a kind Sluice does not read")
}

// stopReasonOut maps the hub's stop_reason to Converse's stopReason.
func stopReasonOut(r string) string {
	switch r {
	case "end_turn", "tool_use", "max_tokens", "stop_sequence", "model_context_window_exceeded":
		return r
	case "refusal":
		return "content_filtered"
	}
	return "end_turn"
}

// hubOut is the hub's answer as the mock's handler writes it.
type hubOut struct {
	Content    []hubIn `json:"content"`
	StopReason string  `json:"stop_reason"`
	Usage      struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

func cvUsageOf(in, out, read, write int64) *cvUsage {
	u := &cvUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out + read + write}
	if read > 0 {
		u.CacheReadInputTokens = &read
	}
	if write > 0 {
		u.CacheWriteInputTokens = &write
	}
	return u
}

// Answer turns the hub's whole answer into Converse's.
func (server) Answer(hub []byte) ([]byte, error) {
	var h hubOut
	if err := json.Unmarshal(hub, &h); err != nil {
		return nil, fmt.Errorf("the hub's answer is not JSON: %v", err)
	}
	msg := &cvMessage{Role: "assistant", Content: []cvBlock{}}
	for i, b := range h.Content {
		var blk cvBlock
		switch b.Type {
		case "text":
			text := ""
			if b.Text != nil {
				text = *b.Text
			}
			blk.Text = &text
		case "tool_use":
			input := b.Input
			if isNull(input) {
				input = json.RawMessage(`{}`)
			}
			blk.ToolUse = &cvToolUse{ToolUseID: b.ID, Name: b.Name, Input: input}
		case "thinking":
			rc := &cvReasoningContent{ReasoningText: &struct {
				Text      string `json:"text"`
				Signature string `json:"signature,omitempty"`
			}{}}
			if b.Thinking != nil {
				rc.ReasoningText.Text = *b.Thinking
			}
			if b.Signature != nil {
				rc.ReasoningText.Signature = *b.Signature
			}
			blk.ReasoningContent = rc
		case "redacted_thinking":
			rc := &cvReasoningContent{}
			if b.Data != nil {
				rc.RedactedContent = *b.Data
			}
			blk.ReasoningContent = rc
		default:
			return nil, fmt.Errorf("content[%d]: a %q block has no Converse form", i, b.Type)
		}
		msg.Content = append(msg.Content, blk)
	}
	out := cvResponse{StopReason: stopReasonOut(h.StopReason), Usage: cvUsageOf(h.Usage.InputTokens, h.Usage.OutputTokens, h.Usage.CacheReadInputTokens, h.Usage.CacheCreationInputTokens)}
	out.Output = &struct {
		Message *cvMessage `json:"message"`
	}{msg}
	out.Metrics = &struct {
		LatencyMs int64 `json:"latencyMs"`
	}{}
	return json.Marshal(&out)
}

// Stream returns the writer that turns the hub's stream into
// ConverseStream's event-stream messages.
func (server) Stream(w io.Writer) io.WriteCloser {
	return &streamWriter{w: w, kinds: map[int]string{}}
}

// streamWriter holds the hub stream's partial event (at most
// native.MaxEvent bytes of it) and what the Converse stream needs from
// earlier events: each block's kind (a text block has no
// contentBlockStart in Converse) and the usage message_start reported.
type streamWriter struct {
	w      io.Writer
	buf    []byte
	kinds  map[int]string
	input  [3]int64 // input, cache read, cache write
	output int64
	err    error
}

// hubEvent is the part of a hub stream event the writer reads.
type hubEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Usage *usageIn `json:"usage"`
	} `json:"message"`
	ContentBlock *hubIn `json:"content_block"`
	Delta        *struct {
		Type        string  `json:"type"`
		Text        *string `json:"text"`
		PartialJSON *string `json:"partial_json"`
		Thinking    *string `json:"thinking"`
		Signature   *string `json:"signature"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usageIn `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type usageIn struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
}

func (s *streamWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	s.buf = append(s.buf, p...)
	events, n := translate.ParseEvents(s.buf)
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	if len(s.buf) > native.MaxEvent {
		s.err = fmt.Errorf("bedrock: a hub stream event is over %d bytes", native.MaxEvent)
		return 0, s.err
	}
	var out []byte
	for _, ev := range events {
		var err error
		if out, err = s.event(out, ev); err != nil {
			s.err = err
			break
		}
	}
	if len(out) > 0 {
		if _, err := s.w.Write(out); err != nil {
			s.err = err
		}
	}
	if s.err != nil {
		return 0, s.err
	}
	return len(p), nil
}

// Close ends the stream: what is left is a partial event, never sent.
func (s *streamWriter) Close() error { return nil }

func (s *streamWriter) usage(u *usageIn) {
	if u == nil {
		return
	}
	for i, v := range []*int64{u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens} {
		if v != nil {
			s.input[i] = *v
		}
	}
	if u.OutputTokens != nil {
		s.output = *u.OutputTokens
	}
}

func appendEvent(out []byte, typ string, v any) []byte {
	payload, _ := json.Marshal(v)
	return AppendMessage(out, eventMessage(typ, payload))
}

// event writes the Converse messages for one hub event.
func (s *streamWriter) event(out []byte, ev translate.Event) ([]byte, error) {
	var h hubEvent
	if err := json.Unmarshal(ev.Data, &h); err != nil {
		// A malformed hub event (a fault the mock was told to inject)
		// stays malformed: a Converse event whose payload is not JSON.
		return AppendMessage(out, eventMessage("contentBlockDelta", ev.Data)), nil
	}
	typ := h.Type
	if typ == "" {
		typ = ev.Name
	}
	idx := map[string]any{"contentBlockIndex": h.Index}
	switch typ {
	case "message_start":
		if h.Message != nil {
			s.usage(h.Message.Usage)
		}
		return appendEvent(out, "messageStart", map[string]string{"role": "assistant"}), nil
	case "content_block_start":
		if h.ContentBlock == nil {
			return out, errors.New("bedrock: content_block_start without its block")
		}
		cb := h.ContentBlock
		s.kinds[h.Index] = cb.Type
		switch cb.Type {
		case "tool_use":
			return appendEvent(out, "contentBlockStart", map[string]any{"contentBlockIndex": h.Index,
				"start": map[string]any{"toolUse": map[string]string{"toolUseId": cb.ID, "name": cb.Name}}}), nil
		case "text":
			if cb.Text != nil && *cb.Text != "" {
				return appendEvent(out, "contentBlockDelta", map[string]any{"contentBlockIndex": h.Index, "delta": map[string]string{"text": *cb.Text}}), nil
			}
		case "redacted_thinking":
			data := ""
			if cb.Data != nil {
				data = *cb.Data
			}
			return appendEvent(out, "contentBlockDelta", map[string]any{"contentBlockIndex": h.Index,
				"delta": map[string]any{"reasoningContent": map[string]string{"redactedContent": data}}}), nil
		}
		return out, nil
	case "content_block_delta":
		if h.Delta == nil {
			return out, errors.New("bedrock: content_block_delta without its delta")
		}
		d := h.Delta
		var delta any
		switch {
		case d.Type == "text_delta" && d.Text != nil:
			delta = map[string]string{"text": *d.Text}
		case d.Type == "input_json_delta" && d.PartialJSON != nil:
			delta = map[string]any{"toolUse": map[string]string{"input": *d.PartialJSON}}
		case d.Type == "thinking_delta" && d.Thinking != nil:
			delta = map[string]any{"reasoningContent": map[string]string{"text": *d.Thinking}}
		case d.Type == "signature_delta" && d.Signature != nil:
			delta = map[string]any{"reasoningContent": map[string]string{"signature": *d.Signature}}
		default:
			return out, nil // a delta Converse has no form for (citations)
		}
		idx["delta"] = delta
		return appendEvent(out, "contentBlockDelta", idx), nil
	case "content_block_stop":
		return appendEvent(out, "contentBlockStop", idx), nil
	case "message_delta":
		s.usage(h.Usage)
		reason := "end_turn"
		if h.Delta != nil && h.Delta.StopReason != nil {
			reason = *h.Delta.StopReason
		}
		return appendEvent(out, "messageStop", map[string]string{"stopReason": stopReasonOut(reason)}), nil
	case "message_stop":
		return appendEvent(out, "metadata", map[string]any{
			"usage":   cvUsageOf(s.input[0], s.output, s.input[1], s.input[2]),
			"metrics": map[string]int64{"latencyMs": 0},
		}), nil
	case "error":
		etyp, msg := "", ""
		if h.Error != nil {
			etyp, msg = h.Error.Type, h.Error.Message
		}
		exc, _ := bedrockError(etyp, 0)
		payload, _ := json.Marshal(map[string]string{"message": msg})
		return AppendMessage(out, exceptionMessage(streamException(exc), payload)), nil
	}
	return out, nil // ping, and event types Converse has no form for
}

// streamException is the ConverseStream exception member for a Bedrock
// exception name: its stream has five.
func streamException(exc string) string {
	switch exc {
	case "ThrottlingException", "ValidationException", "ServiceUnavailableException":
		return lowerFirst(exc)
	case "ModelTimeoutException", "ModelErrorException":
		return "modelStreamErrorException"
	}
	return "internalServerException"
}
