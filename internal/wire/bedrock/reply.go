package bedrock

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// reply reads one Converse call's answer.
type reply struct {
	model string
	// forced is the tool a structured answer was forced into
	// (JSONAnswerTool), "" when none.
	forced string
	// request is the Converse request's hash: a stream's message id.
	request string
}

// hashOf is a stable id part for body: Converse answers carry no id, and
// a codec has no clock or randomness to make one.
func hashOf(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:12])
}

func badResponse(format string, args ...any) error {
	return fmt.Errorf("%w: bedrock: %s", translate.ErrResponse, fmt.Sprintf(format, args...))
}

// StopReason maps Converse's stopReason to the hub's stop_reason.
func StopReason(r string) string {
	switch r {
	case "end_turn", "tool_use", "max_tokens", "stop_sequence", "model_context_window_exceeded":
		return r
	case "guardrail_intervened", "content_filtered":
		return "refusal"
	}
	return "end_turn"
}

// native.Block is a hub content block as the answer writes it.

func hubUsageOf(u *cvUsage) native.Usage {
	if u == nil {
		return native.Usage{}
	}
	return native.Usage{
		InputTokens:              u.InputTokens,
		OutputTokens:             u.OutputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens,
		CacheCreationInputTokens: u.CacheWriteInputTokens,
	}
}

// Answer turns a whole Converse answer into a hub answer.
func (r *reply) Answer(body []byte) ([]byte, error) {
	var cv cvResponse
	if err := json.Unmarshal(body, &cv); err != nil {
		return nil, badResponse("the answer is not Converse's JSON: %v", err)
	}
	if cv.Output == nil || cv.Output.Message == nil {
		return nil, badResponse("the answer has no output.message")
	}
	if cv.StopReason == "" {
		return nil, badResponse("the answer has no stopReason")
	}
	out := native.Answer{
		ID: "msg_bedrock_" + hashOf(body), Type: "message", Role: "assistant", Model: r.model,
		Content: []native.Block{}, Usage: hubUsageOf(cv.Usage),
	}
	stop := StopReason(cv.StopReason)
	forcedSeen := false
	for i, b := range cv.Output.Message.Content {
		switch {
		case b.Text != nil && r.forced != "":
			// A structured answer is the forced tool's input alone (see
			// events.delta): text beside it is dropped.
		case b.Text != nil:
			out.Content = append(out.Content, native.Block{Type: "text", Text: b.Text})
		case b.ToolUse != nil:
			input := b.ToolUse.Input
			if isNull(input) {
				input = json.RawMessage(`{}`)
			}
			if !json.Valid(input) {
				return nil, badResponse("content[%d].toolUse.input is not JSON", i)
			}
			if r.forced != "" && b.ToolUse.Name == r.forced {
				var compact bytes.Buffer
				_ = json.Compact(&compact, input)
				text := compact.String()
				out.Content = append(out.Content, native.Block{Type: "text", Text: &text})
				forcedSeen = true
				continue
			}
			if b.ToolUse.ToolUseID == "" || b.ToolUse.Name == "" {
				return nil, badResponse("content[%d].toolUse has no toolUseId or name", i)
			}
			out.Content = append(out.Content, native.Block{Type: "tool_use", ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Input: input})
		case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
			rt := b.ReasoningContent.ReasoningText
			sig := rt.Signature
			out.Content = append(out.Content, native.Block{Type: "thinking", Thinking: &rt.Text, Signature: &sig})
		case b.ReasoningContent != nil && b.ReasoningContent.RedactedContent != "":
			data := b.ReasoningContent.RedactedContent
			out.Content = append(out.Content, native.Block{Type: "redacted_thinking", Data: &data})
		default:
			return nil, badResponse("content[%d] is a block Sluice has no hub form for", i)
		}
	}
	if forcedSeen && stop == "tool_use" {
		stop = "end_turn"
	}
	out.StopReason = &stop
	res, err := json.Marshal(&out)
	if err != nil {
		return nil, badResponse("%v", err)
	}
	return res, nil
}

// Stream reads a ConverseStream answer.
func (r *reply) Stream(rd io.Reader) native.Events {
	return &events{r: r, dec: NewDecoder(rd), blocks: map[int]*openBlock{}}
}

// Block kinds in a stream.
const (
	kindText = iota
	kindTool
	kindThinking
	kindForced // the forced tool's input, relayed as text
	kindMuted  // text beside a forced tool's input: not the answer, dropped
)

type openBlock struct {
	hub  int
	kind int
}

// events turns ConverseStream's messages into hub events.
//
// Converse sends messageStop (the stop reason) before metadata (the
// usage), while the hub's message_delta carries both: the stop reason is
// held, and message_delta and message_stop follow metadata. A stream
// that ends cleanly after messageStop without metadata still ends (its
// message_delta then carries no usage, and the gateway counts the
// relayed deltas); one that ends before messageStop is truncated.
type events struct {
	r   *reply
	dec *Decoder
	out []byte

	started, stopped, done, failed bool
	stopReason                     string
	usage                          *cvUsage
	blocks                         map[int]*openBlock
	nextIndex                      int
	forcedSeen                     bool
}

// Next returns the next hub events.
func (e *events) Next() ([]byte, error) {
	for {
		switch {
		case e.failed:
			return nil, translate.ErrStreamFailed
		case e.done:
			return nil, io.EOF
		}
		m, err := e.dec.Next()
		if err == io.EOF {
			if !e.stopped {
				return nil, fmt.Errorf("%w: bedrock: the stream ended before messageStop", translate.ErrTruncated)
			}
			e.finish()
			return e.flush(), nil
		}
		if err != nil {
			return nil, err
		}
		if err := e.message(&m); err != nil {
			return nil, err
		}
		if len(e.out) > 0 {
			return e.flush(), nil
		}
	}
}

func (e *events) flush() []byte {
	out := e.out
	e.out = nil
	return out
}

// emit appends the hub event name whose data is v with "type": name
// first, as Anthropic writes it (the gateway's usage scan reads a
// message_start's counts as provisional only after its type).
func (e *events) emit(name string, v map[string]any) {
	data, err := json.Marshal(v)
	if err != nil {
		// The values are Sluice's own types: this cannot happen.
		panic(err)
	}
	typed := append([]byte(`{"type":`), quoted(name)...)
	if len(data) > 2 {
		typed = append(typed, ',')
	}
	typed = append(typed, data[1:]...)
	e.out = translate.AppendEvent(e.out, translate.Event{Name: name, Data: typed})
}

func (e *events) message(m *Message) error {
	switch mt := m.Get(":message-type"); mt {
	case "event":
		return e.event(m.Get(":event-type"), m.Payload)
	case "exception":
		e.fail(m.Get(":exception-type"), messageOf(m.Payload))
		return nil
	case "error":
		e.fail(m.Get(":error-code"), m.Get(":error-message"))
		return nil
	default:
		return badResponse("an event-stream message of type %q", mt)
	}
}

// messageOf reads an exception's {"message"} (or {"Message"}).
func messageOf(payload []byte) string {
	var v struct {
		Message  string `json:"message"`
		Message2 string `json:"Message"`
	}
	_ = json.Unmarshal(payload, &v)
	if v.Message == "" {
		v.Message = v.Message2
	}
	return v.Message
}

// streamErrorType maps a ConverseStream exception to the hub's error type.
func streamErrorType(exception string) string {
	switch lowerFirst(exception) {
	case "throttlingException", "serviceQuotaExceededException":
		return "rate_limit_error"
	case "serviceUnavailableException", "modelNotReadyException":
		return "overloaded_error"
	case "validationException":
		return "invalid_request_error"
	case "modelTimeoutException":
		return "timeout_error"
	case "accessDeniedException":
		return "permission_error"
	}
	return "api_error"
}

func lowerFirst(s string) string {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

func (e *events) fail(exception, msg string) {
	if msg == "" {
		msg = "Bedrock's stream failed"
	}
	if exception != "" {
		msg = exception + ": " + msg
	}
	e.emit("error", map[string]any{"error": struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{streamErrorType(exception), msg}})
	e.failed = true
}

func (e *events) event(typ string, payload []byte) error {
	if typ == "messageStart" {
		var v cvMessageStart
		if err := json.Unmarshal(payload, &v); err != nil {
			return badResponse("messageStart: %v", err)
		}
		if e.started {
			return badResponse("messageStart repeated")
		}
		e.started = true
		e.emit("message_start", map[string]any{"message": native.Answer{
			ID: "msg_bedrock_" + e.r.request, Type: "message", Role: "assistant", Model: e.r.model,
			Content: []native.Block{}, Usage: native.Usage{},
		}})
		return nil
	}
	switch typ {
	case "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata":
		if !e.started {
			return badResponse("%s before messageStart", typ)
		}
	default:
		// Converse may add event types; unknown ones are skipped.
		return nil
	}
	if e.stopped && typ != "metadata" {
		return badResponse("%s after messageStop", typ)
	}
	switch typ {
	case "contentBlockStart":
		var v cvBlockStart
		if err := json.Unmarshal(payload, &v); err != nil || v.ContentBlockIndex == nil || v.Start == nil {
			return badResponse("contentBlockStart is not well-formed")
		}
		if _, open := e.blocks[*v.ContentBlockIndex]; open {
			return badResponse("content block %d started twice", *v.ContentBlockIndex)
		}
		tu := v.Start.ToolUse
		if tu == nil {
			// A start of another kind (an image, say) has no hub form.
			return badResponse("contentBlockStart of a kind Sluice has no hub form for")
		}
		if tu.ToolUseID == "" || tu.Name == "" {
			return badResponse("contentBlockStart's toolUse has no toolUseId or name")
		}
		if e.r.forced != "" && tu.Name == e.r.forced {
			// The forced tool's input is the answer: a text block.
			b := e.open(*v.ContentBlockIndex, kindForced)
			e.forcedSeen = true
			e.emit("content_block_start", map[string]any{"index": b.hub, "content_block": map[string]any{"type": "text", "text": ""}})
			return nil
		}
		b := e.open(*v.ContentBlockIndex, kindTool)
		e.emit("content_block_start", map[string]any{"index": b.hub,
			"content_block": map[string]any{"type": "tool_use", "id": tu.ToolUseID, "name": tu.Name, "input": map[string]any{}}})
	case "contentBlockDelta":
		return e.delta(payload)
	case "contentBlockStop":
		var v cvBlockStop
		if err := json.Unmarshal(payload, &v); err != nil || v.ContentBlockIndex == nil {
			return badResponse("contentBlockStop is not well-formed")
		}
		b, open := e.blocks[*v.ContentBlockIndex]
		if !open {
			return badResponse("content block %d stopped but not open", *v.ContentBlockIndex)
		}
		e.stop(*v.ContentBlockIndex, b)
	case "messageStop":
		var v cvMessageStop
		if err := json.Unmarshal(payload, &v); err != nil || v.StopReason == "" {
			return badResponse("messageStop is not well-formed")
		}
		// Blocks left open are closed, in the order they opened.
		for len(e.blocks) > 0 {
			first := -1
			for ci, b := range e.blocks {
				if first < 0 || b.hub < e.blocks[first].hub {
					first = ci
				}
			}
			e.stop(first, e.blocks[first])
		}
		e.stopped, e.stopReason = true, StopReason(v.StopReason)
		if e.forcedSeen && e.stopReason == "tool_use" {
			e.stopReason = "end_turn"
		}
		if e.usage != nil {
			e.finish()
		}
	case "metadata":
		var v cvMetadata
		if err := json.Unmarshal(payload, &v); err != nil {
			return badResponse("metadata is not well-formed: %v", err)
		}
		if v.Usage != nil {
			e.usage = v.Usage
		}
		if e.stopped {
			e.finish()
		}
	}
	return nil
}

func (e *events) open(ci, kind int) *openBlock {
	b := &openBlock{hub: e.nextIndex, kind: kind}
	e.nextIndex++
	e.blocks[ci] = b
	return b
}

func (e *events) stop(ci int, b *openBlock) {
	delete(e.blocks, ci)
	if b.kind == kindMuted {
		return
	}
	e.emit("content_block_stop", map[string]any{"index": b.hub})
}

// finish ends the hub stream: message_delta with the held stop reason
// and the usage, then message_stop.
func (e *events) finish() {
	delta := map[string]any{"delta": map[string]any{"stop_reason": e.stopReason, "stop_sequence": nil}}
	if e.usage != nil {
		u := hubUsageOf(e.usage)
		if u.CacheReadInputTokens == nil {
			u.CacheReadInputTokens = new(int64)
		}
		if u.CacheCreationInputTokens == nil {
			u.CacheCreationInputTokens = new(int64)
		}
		delta["usage"] = u
	}
	e.emit("message_delta", delta)
	e.emit("message_stop", map[string]any{})
	e.done = true
}

func (e *events) delta(payload []byte) error {
	var v cvBlockDelta
	if err := json.Unmarshal(payload, &v); err != nil || v.ContentBlockIndex == nil || v.Delta == nil {
		return badResponse("contentBlockDelta is not well-formed")
	}
	ci, d := *v.ContentBlockIndex, v.Delta
	b, open := e.blocks[ci]
	startIfNew := func(kind int, block map[string]any) *openBlock {
		if open {
			return b
		}
		b = e.open(ci, kind)
		block["type"] = []string{kindText: "text", kindThinking: "thinking"}[kind]
		e.emit("content_block_start", map[string]any{"index": b.hub, "content_block": block})
		return b
	}
	switch {
	case d.Text != nil && e.r.forced != "":
		// A structured answer is the forced tool's input alone: words a
		// model writes beside it (a preamble) would make the client's
		// text not JSON. The block gets no hub index.
		if !open {
			e.blocks[ci] = &openBlock{hub: -1, kind: kindMuted}
		} else if b.kind != kindMuted {
			return badResponse("a text delta in content block %d, which is not text", ci)
		}
	case d.Text != nil:
		b = startIfNew(kindText, map[string]any{"text": ""})
		if b.kind != kindText {
			return badResponse("a text delta in content block %d, which is not text", ci)
		}
		e.emit("content_block_delta", map[string]any{"index": b.hub, "delta": map[string]string{"type": "text_delta", "text": *d.Text}})
	case d.ToolUse != nil:
		if !open || (b.kind != kindTool && b.kind != kindForced) {
			return badResponse("a toolUse delta in content block %d, which is not a tool call", ci)
		}
		if b.kind == kindForced {
			if d.ToolUse.Input == "" {
				return nil
			}
			e.emit("content_block_delta", map[string]any{"index": b.hub, "delta": map[string]string{"type": "text_delta", "text": d.ToolUse.Input}})
			return nil
		}
		e.emit("content_block_delta", map[string]any{"index": b.hub, "delta": map[string]string{"type": "input_json_delta", "partial_json": d.ToolUse.Input}})
	case d.ReasoningContent != nil:
		rc := d.ReasoningContent
		if rc.RedactedContent != nil {
			if open {
				return badResponse("redacted reasoning inside open content block %d", ci)
			}
			b = e.open(ci, kindThinking)
			e.emit("content_block_start", map[string]any{"index": b.hub, "content_block": map[string]any{"type": "redacted_thinking", "data": *rc.RedactedContent}})
			return nil
		}
		b = startIfNew(kindThinking, map[string]any{"thinking": "", "signature": ""})
		if b.kind != kindThinking {
			return badResponse("a reasoning delta in content block %d, which is not reasoning", ci)
		}
		if rc.Text != nil {
			e.emit("content_block_delta", map[string]any{"index": b.hub, "delta": map[string]string{"type": "thinking_delta", "thinking": *rc.Text}})
		}
		if rc.Signature != nil {
			e.emit("content_block_delta", map[string]any{"index": b.hub, "delta": map[string]string{"type": "signature_delta", "signature": *rc.Signature}})
		}
	default:
		return badResponse("a contentBlockDelta of a kind Sluice has no hub form for")
	}
	return nil
}
