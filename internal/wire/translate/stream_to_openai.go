package translate

import (
	"encoding/json"
	"fmt"
)

// Stream translates one streamed answer, event by event, holding only
// what the next event needs (ids, open blocks, the stop reason): never
// the answer. It is not safe for concurrent use; a relay calls Feed for
// each upstream event in order, then Close once.
type Stream interface {
	// Feed translates one upstream event into zero or more client events.
	// An error means the upstream stream is broken (not JSON, events out
	// of order, content the client's dialect cannot carry): nothing more
	// will be emitted, and the relay should end the client's stream with
	// its own error event. An upstream error event is not an error here:
	// it comes out translated, and Close reports ErrStreamFailed.
	Feed(ev Event) ([]Event, error)
	// Close reports how the stream ended: nil when its terminator came
	// and went out translated; ErrStreamFailed after an upstream error
	// event; Feed's error after one; else ErrTruncated. It emits nothing:
	// a stream cut short must not be dressed up as a whole one.
	Close() error
}

var (
	_ Stream = (*StreamToOpenAI)(nil)
	_ Stream = (*StreamToAnthropic)(nil)
)

// StreamConfig shapes a stream translation.
type StreamConfig struct {
	// IncludeUsage: end an OpenAI stream with a usage chunk, as the
	// client asked with stream_options.include_usage (Translated.IncludeUsage).
	IncludeUsage bool
	// Created stamps OpenAI chunks, in Unix seconds: Anthropic's events
	// carry no time, and this package reads no clock.
	Created int64
}

// streamState is where a translation is; every translator has one.
type streamState struct {
	started bool  // the first event went out
	done    bool  // the terminator went out
	failed  bool  // an upstream error event went out
	err     error // Feed failed
}

func (s *streamState) close() error {
	switch {
	case s.err != nil:
		return s.err
	case s.failed:
		return ErrStreamFailed
	case s.done:
		return nil
	}
	return ErrTruncated
}

// fail records Feed's error, which every later Feed and Close returns.
func (s *streamState) fail(format string, args ...any) ([]Event, error) {
	s.err = fmt.Errorf("%w: %s", ErrResponse, fmt.Sprintf(format, args...))
	return nil, s.err
}

// StreamToOpenAI turns an Anthropic Messages stream into OpenAI
// chat.completion.chunk events: a role chunk at message_start, a content
// chunk per text_delta, a tool_calls chunk at each tool_use block's start
// (index, id, name) and per input_json_delta (arguments), a finish chunk
// at message_delta, then at message_stop the usage chunk if asked for and
// [DONE].
type StreamToOpenAI struct {
	cfg StreamConfig
	streamState
	id, model  string
	blocks     map[int]*anStreamBlock
	tools      int
	usage      anUsageIn
	finishSent bool
}

type anStreamBlock struct {
	tool   bool
	skip   bool // thinking: nothing of it reaches the client
	index  int  // the OpenAI tool call index
	closed bool
}

// NewStreamToOpenAI returns a translator for one Anthropic stream.
func NewStreamToOpenAI(cfg StreamConfig) *StreamToOpenAI {
	return &StreamToOpenAI{cfg: cfg, blocks: map[int]*anStreamBlock{}}
}

type anEventIn struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string     `json:"id"`
		Model string     `json:"model"`
		Usage *anUsageIn `json:"usage"`
	} `json:"message"`
	Index        *int       `json:"index"`
	ContentBlock *anBlockIn `json:"content_block"`
	Delta        *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *struct {
		InputTokens              *int64 `json:"input_tokens"`
		OutputTokens             *int64 `json:"output_tokens"`
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// OpenAI chunk, as written.
type oaChunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []oaChunkChoice `json:"choices"`
	Usage   *oaUsage        `json:"usage,omitempty"`
}

type oaChunkChoice struct {
	Index        int             `json:"index"`
	Delta        oaDelta         `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type oaDelta struct {
	Role      string            `json:"role,omitempty"`
	Content   *string           `json:"content,omitempty"`
	ToolCalls []oaToolCallDelta `json:"tool_calls,omitempty"`
}

type oaToolCallDelta struct {
	Index    int             `json:"index"`
	ID       string          `json:"id,omitempty"`
	Type     string          `json:"type,omitempty"`
	Function oaFunctionDelta `json:"function"`
}

type oaFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Feed implements Stream.
func (t *StreamToOpenAI) Feed(ev Event) ([]Event, error) {
	if t.err != nil {
		return nil, t.err
	}
	if t.done || t.failed || len(ev.Data) == 0 {
		return nil, nil
	}
	var in anEventIn
	if err := json.Unmarshal(ev.Data, &in); err != nil {
		return t.fail("event data is not JSON: %v", err)
	}
	typ := in.Type
	if typ == "" {
		typ = ev.Name
	}
	switch typ {
	case "error":
		t.failed = true
		return []Event{streamErrorToOpenAI(ev.Data)}, nil
	case "ping":
		return nil, nil
	case "message_start":
		if t.started || in.Message == nil {
			return t.fail("message_start repeated or without its message")
		}
		t.started = true
		t.id, t.model = in.Message.ID, in.Message.Model
		if u := in.Message.Usage; u != nil {
			t.usage = *u
		}
		return t.chunk(oaDelta{Role: "assistant", Content: ptr("")}, nil)
	}
	if !t.started {
		if isAnthropicEvent(typ) {
			return t.fail("%s before message_start", typ)
		}
		return nil, nil
	}
	if t.finishSent && (typ == "content_block_start" || typ == "content_block_delta") {
		return t.fail("%s after message_delta", typ)
	}
	switch typ {
	case "content_block_start":
		return t.blockStart(in)
	case "content_block_delta":
		return t.blockDelta(in)
	case "content_block_stop":
		b, err := t.block(in.Index)
		if err != nil {
			return nil, err
		}
		b.closed = true
		return nil, nil
	case "message_delta":
		return t.messageDelta(in)
	case "message_stop":
		if !t.finishSent {
			return t.fail("message_stop before any stop_reason")
		}
		t.done = true
		var out []Event
		if t.cfg.IncludeUsage {
			ev, err := t.encode(oaChunk{Choices: []oaChunkChoice{}, Usage: usageToOpenAI(&t.usage)})
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
		return append(out, Event{Data: doneData}), nil
	}
	// Anthropic may add event types; its clients are told to skip those
	// they do not know.
	return nil, nil
}

func isAnthropicEvent(typ string) bool {
	switch typ {
	case "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
		return true
	}
	return false
}

func (t *StreamToOpenAI) block(i *int) (*anStreamBlock, error) {
	if i == nil {
		_, err := t.fail("a content block event without its index")
		return nil, err
	}
	b := t.blocks[*i]
	if b == nil || b.closed {
		_, err := t.fail("content block %d is not open", *i)
		return nil, err
	}
	return b, nil
}

func (t *StreamToOpenAI) blockStart(in anEventIn) ([]Event, error) {
	if in.Index == nil || in.ContentBlock == nil {
		return t.fail("content_block_start without its index or block")
	}
	if t.blocks[*in.Index] != nil {
		return t.fail("content block %d started twice", *in.Index)
	}
	cb := in.ContentBlock
	switch cb.Type {
	case "text":
		t.blocks[*in.Index] = &anStreamBlock{}
		if cb.Text == "" {
			return nil, nil
		}
		return t.chunk(oaDelta{Content: ptr(cb.Text)}, nil)
	case "tool_use":
		if cb.ID == "" || cb.Name == "" {
			return t.fail("tool_use block %d without its id or name", *in.Index)
		}
		b := &anStreamBlock{tool: true, index: t.tools}
		t.blocks[*in.Index] = b
		t.tools++
		call := oaToolCallDelta{Index: b.index, ID: cb.ID, Type: "function", Function: oaFunctionDelta{Name: cb.Name}}
		if !isNull(cb.Input) && !isEmptyObject(cb.Input) {
			args, err := inputToArguments(cb.Input)
			if err != nil {
				return t.fail("tool_use input: %v", err)
			}
			call.Function.Arguments = args
		}
		return t.chunk(oaDelta{ToolCalls: []oaToolCallDelta{call}}, nil)
	case "thinking", "redacted_thinking":
		// Reasoning, which OpenAI's chunks do not show; its tokens are in
		// message_delta's output_tokens all the same.
		t.blocks[*in.Index] = &anStreamBlock{skip: true}
		return nil, nil
	}
	return t.fail("a %q block has no form in OpenAI's chunks", cb.Type)
}

func (t *StreamToOpenAI) blockDelta(in anEventIn) ([]Event, error) {
	b, err := t.block(in.Index)
	if err != nil {
		return nil, err
	}
	if in.Delta == nil {
		return t.fail("content_block_delta without its delta")
	}
	switch {
	case b.skip:
		return nil, nil // thinking_delta, signature_delta
	case in.Delta.Type == "text_delta" && !b.tool:
		if in.Delta.Text == "" {
			return nil, nil
		}
		return t.chunk(oaDelta{Content: ptr(in.Delta.Text)}, nil)
	case in.Delta.Type == "input_json_delta" && b.tool:
		if in.Delta.PartialJSON == "" {
			return nil, nil
		}
		return t.chunk(oaDelta{ToolCalls: []oaToolCallDelta{{Index: b.index, Function: oaFunctionDelta{Arguments: in.Delta.PartialJSON}}}}, nil)
	}
	return t.fail("a %q delta has no form in OpenAI's chunks here", in.Delta.Type)
}

func (t *StreamToOpenAI) messageDelta(in anEventIn) ([]Event, error) {
	// message_delta's usage counts are running totals, so the last wins.
	if u := in.Usage; u != nil {
		set := func(dst *int64, src *int64) {
			if src != nil {
				*dst = *src
			}
		}
		set(&t.usage.OutputTokens, u.OutputTokens)
		set(&t.usage.InputTokens, u.InputTokens)
		if u.CacheReadInputTokens != nil {
			t.usage.CacheReadInputTokens = u.CacheReadInputTokens
		}
		if u.CacheCreationInputTokens != nil {
			t.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
		}
	}
	if in.Delta == nil || in.Delta.StopReason == nil || t.finishSent {
		return nil, nil
	}
	t.finishSent = true
	return t.chunk(oaDelta{}, ptr(FinishReason(*in.Delta.StopReason)))
}

func (t *StreamToOpenAI) chunk(d oaDelta, finish *string) ([]Event, error) {
	ev, err := t.encode(oaChunk{Choices: []oaChunkChoice{{Delta: d, Logprobs: jsonNull, FinishReason: finish}}})
	if err != nil {
		return nil, err
	}
	return []Event{ev}, nil
}

func (t *StreamToOpenAI) encode(c oaChunk) (Event, error) {
	c.ID, c.Object, c.Created, c.Model = t.id, "chat.completion.chunk", t.cfg.Created, t.model
	b, err := marshal(c)
	if err != nil {
		t.err = err
	}
	return Event{Data: b}, err
}

// Close implements Stream.
func (t *StreamToOpenAI) Close() error { return t.close() }
