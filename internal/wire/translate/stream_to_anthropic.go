package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// StreamToAnthropic turns an OpenAI chat.completion.chunk stream into
// Anthropic Messages events: message_start at the first chunk; one
// content block per run of text and per tool call, each started, fed
// deltas (text_delta, input_json_delta) and stopped; then, at [DONE],
// message_delta with the stop reason and usage, and message_stop.
//
// OpenAI sends usage in a chunk after the one with finish_reason (when
// asked: RequestToOpenAI always asks), so message_delta waits for [DONE]
// rather than going out with the finish_reason. The translator holds that
// one stop reason and the usage, nothing of the content.
type StreamToAnthropic struct {
	streamState
	id        string
	next      int // the next content block's index
	open      int // what block is open: blockNone, blockText, blockTool
	openTool  int // the OpenAI index of the open tool call
	toolsSeen []int
	stop      string
	refused   bool
	usage     *oaUsageIn
}

const (
	blockNone = iota
	blockText
	blockTool
)

// NewStreamToAnthropic returns a translator for one OpenAI stream.
func NewStreamToAnthropic() *StreamToAnthropic { return &StreamToAnthropic{} }

type oaChunkIn struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string        `json:"content"`
			Refusal   *string        `json:"refusal"`
			ToolCalls []oaToolCallIn `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsageIn   `json:"usage"`
	Error *oaErrorInfo `json:"error"`
}

// Anthropic events, as written.
type anMessageStart struct {
	Type    string     `json:"type"`
	Message anResponse `json:"message"`
}

type anBlockStart struct {
	Type         string  `json:"type"`
	Index        int     `json:"index"`
	ContentBlock anBlock `json:"content_block"`
}

type anBlockDelta struct {
	Type  string       `json:"type"`
	Index int          `json:"index"`
	Delta anDeltaWrite `json:"delta"`
}

type anDeltaWrite struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

type anBlockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type anMessageDelta struct {
	Type  string `json:"type"`
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage anUsage `json:"usage"`
}

// Feed implements Stream.
func (t *StreamToAnthropic) Feed(ev Event) ([]Event, error) {
	if t.err != nil {
		return nil, t.err
	}
	data := bytes.TrimSpace(ev.Data)
	if t.done || t.failed || len(data) == 0 {
		return nil, nil
	}
	var out []Event
	if bytes.Equal(data, doneData) {
		return t.finish(out)
	}
	var in oaChunkIn
	if err := json.Unmarshal(data, &in); err != nil {
		return t.fail("chunk is not JSON: %v", err)
	}
	if in.Error != nil {
		t.failed = true
		return []Event{streamErrorToAnthropic(data)}, nil
	}
	var err error
	if !t.started {
		if out, err = t.start(out, in.ID, in.Model); err != nil {
			return nil, err
		}
	}
	for _, ch := range in.Choices {
		if ch.Index != 0 {
			return t.fail("choice %d: a translated request asks for one choice", ch.Index)
		}
		d := ch.Delta
		if t.stop != "" && (d.Content != nil && *d.Content != "" || d.Refusal != nil && *d.Refusal != "" || len(d.ToolCalls) > 0) {
			return t.fail("content after finish_reason")
		}
		for _, text := range []*string{d.Content, d.Refusal} {
			if text == nil || *text == "" {
				continue
			}
			if out, err = t.text(out, *text); err != nil {
				return nil, err
			}
		}
		if d.Refusal != nil && *d.Refusal != "" {
			t.refused = true
		}
		for _, tc := range d.ToolCalls {
			if out, err = t.toolCall(out, tc); err != nil {
				return nil, err
			}
		}
		if ch.FinishReason != nil {
			if out, err = t.closeBlock(out); err != nil {
				return nil, err
			}
			t.stop = StopReason(*ch.FinishReason)
		}
	}
	if in.Usage != nil {
		t.usage = in.Usage
	}
	return out, nil
}

func (t *StreamToAnthropic) start(out []Event, id, model string) ([]Event, error) {
	t.started, t.id = true, id
	return t.emit(out, "message_start", anMessageStart{Type: "message_start", Message: anResponse{
		ID: id, Type: "message", Role: "assistant", Model: model, Content: []anBlock{},
		// OpenAI counts the prompt only at the end: message_delta carries it.
	}})
}

func (t *StreamToAnthropic) text(out []Event, s string) ([]Event, error) {
	var err error
	if t.open != blockText {
		if out, err = t.closeBlock(out); err != nil {
			return nil, err
		}
		t.open = blockText
		if out, err = t.emit(out, "content_block_start", anBlockStart{Type: "content_block_start", Index: t.next, ContentBlock: textBlock("")}); err != nil {
			return nil, err
		}
	}
	return t.emit(out, "content_block_delta", anBlockDelta{Type: "content_block_delta", Index: t.next, Delta: anDeltaWrite{Type: "text_delta", Text: &s}})
}

// toolCall starts a tool_use block for a call it has not seen, and feeds
// the arguments of the open one. Anthropic's blocks run one at a time, so
// a call that comes back after another began cannot be carried.
func (t *StreamToAnthropic) toolCall(out []Event, tc oaToolCallIn) ([]Event, error) {
	var err error
	if t.open != blockTool || t.openTool != tc.Index {
		for _, seen := range t.toolsSeen {
			if seen == tc.Index {
				return t.fail("tool call %d resumed after another began", tc.Index)
			}
		}
		if tc.Function.Name == nil || *tc.Function.Name == "" {
			return t.fail("tool call %d starts without its name", tc.Index)
		}
		if out, err = t.closeBlock(out); err != nil {
			return nil, err
		}
		id := tc.ID
		if id == "" {
			id = "toolu_" + t.id + "_" + strconv.Itoa(tc.Index)
		}
		t.open, t.openTool = blockTool, tc.Index
		t.toolsSeen = append(t.toolsSeen, tc.Index)
		block := anBlock{Type: "tool_use", ID: id, Name: *tc.Function.Name, Input: json.RawMessage("{}")}
		if out, err = t.emit(out, "content_block_start", anBlockStart{Type: "content_block_start", Index: t.next, ContentBlock: block}); err != nil {
			return nil, err
		}
	}
	if tc.Function.Arguments == "" {
		return out, nil
	}
	args := tc.Function.Arguments
	return t.emit(out, "content_block_delta", anBlockDelta{Type: "content_block_delta", Index: t.next, Delta: anDeltaWrite{Type: "input_json_delta", PartialJSON: &args}})
}

func (t *StreamToAnthropic) closeBlock(out []Event) ([]Event, error) {
	if t.open == blockNone {
		return out, nil
	}
	t.open = blockNone
	i := t.next
	t.next++
	return t.emit(out, "content_block_stop", anBlockStop{Type: "content_block_stop", Index: i})
}

// finish answers [DONE]: the held stop reason and usage go out, and the
// message ends.
func (t *StreamToAnthropic) finish(out []Event) ([]Event, error) {
	if t.stop == "" {
		return t.fail("[DONE] before any finish_reason")
	}
	var err error
	if out, err = t.closeBlock(out); err != nil {
		return nil, err
	}
	var md anMessageDelta
	md.Type = "message_delta"
	md.Delta.StopReason = t.stop
	if t.refused {
		md.Delta.StopReason = "refusal"
	}
	md.Usage = usageToAnthropic(t.usage)
	if out, err = t.emit(out, "message_delta", md); err != nil {
		return nil, err
	}
	t.done = true
	return t.emit(out, "message_stop", map[string]string{"type": "message_stop"})
}

func (t *StreamToAnthropic) emit(out []Event, name string, v any) ([]Event, error) {
	b, err := marshal(v)
	if err != nil {
		t.err = err
		return nil, err
	}
	return append(out, Event{Name: name, Data: b}), nil
}

// Close implements Stream.
func (t *StreamToAnthropic) Close() error { return t.close() }
