package translate

import (
	"bytes"
	"encoding/json"
	"strings"
)

// StreamToResponses turns a chat.completion.chunk stream into the
// Responses API's events: response.created and response.in_progress at
// the first chunk; one output item per run of text (a message, with an
// output_text part, or a refusal part) and per tool call (a
// function_call), each added, fed deltas and done; then, at [DONE],
// response.completed (response.incomplete for an answer cut short) with
// the whole response, usage included.
//
// Unlike this package's other stream translators it holds the answer:
// the Responses API's grammar repeats an item's text and arguments in
// its .done events, and every item in the final response. Each event's
// data carries its type and a sequence_number counted from 0.
type StreamToResponses struct {
	cfg StreamConfig
	streamState
	seq      int64
	base     string // the answer's id, which the ids derive from
	model    string
	created  int64
	items    []*rsStreamItem
	open     int         // the index in items of the open item, or -1
	calls    map[int]int // a chat tool call's index → its item's
	finished bool        // the finish_reason came
	finish   string
	usage    *oaUsageIn
}

var _ Stream = (*StreamToResponses)(nil)

type rsStreamItem struct {
	function bool
	id       string
	status   string
	parts    []*rsStreamPart
	callID   string
	name     string
	args     strings.Builder
}

type rsStreamPart struct {
	refusal bool
	text    strings.Builder
}

func (it *rsStreamItem) item() rsItem {
	out := rsItem{Function: it.function, ID: it.id, Status: it.status, CallID: it.callID, Name: it.name, Args: it.args.String()}
	if !it.function {
		out.Parts = make([]rsPart, len(it.parts))
		for i, p := range it.parts {
			out.Parts[i] = p.part()
		}
	}
	return out
}

func (p *rsStreamPart) part() rsPart { return rsPart{Refusal: p.refusal, Text: p.text.String()} }

// NewStreamToResponses returns a Stream that turns chat.completion.chunk
// events (and [DONE]) into the Responses API's response.* events.
// cfg.Created stamps created_at if the chunks carry no created.
func NewStreamToResponses(cfg StreamConfig) Stream {
	return &StreamToResponses{cfg: cfg, open: -1, calls: map[int]int{}}
}

// rsEvent is any Responses API stream event but error, as written: each
// kind sets its own fields.
type rsEvent struct {
	Type           string          `json:"type"`
	Response       *rsResponse     `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Item           *rsItem         `json:"item,omitempty"`
	Part           *rsPart         `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Refusal        *string         `json:"refusal,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Name           string          `json:"name,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
	SequenceNumber int64           `json:"sequence_number"`
}

// rsErrorEvent is the Responses API's error event.
type rsErrorEvent struct {
	Type           string  `json:"type"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
	SequenceNumber int64   `json:"sequence_number"`
}

// Feed implements Stream.
func (t *StreamToResponses) Feed(ev Event) ([]Event, error) {
	if t.err != nil {
		return nil, t.err
	}
	data := bytes.TrimSpace(ev.Data)
	if t.done || t.failed || len(data) == 0 {
		return nil, nil
	}
	if bytes.Equal(data, doneData) {
		return t.complete()
	}
	var in oaChunkIn
	if err := json.Unmarshal(data, &in); err != nil {
		return t.fail("chunk is not JSON: %v", err)
	}
	if in.Error != nil {
		t.failed = true
		return t.errorEvent(in.Error)
	}
	var out []Event
	var err error
	if !t.started {
		if out, err = t.start(in); err != nil {
			return nil, err
		}
	}
	if t.model == "" {
		t.model = in.Model
	}
	for _, ch := range in.Choices {
		if ch.Index != 0 {
			return t.fail("choice %d: a translated request asks for one choice", ch.Index)
		}
		d := ch.Delta
		hasText := d.Content != nil && *d.Content != ""
		hasRefusal := d.Refusal != nil && *d.Refusal != ""
		if t.finished && (hasText || hasRefusal || len(d.ToolCalls) > 0) {
			return t.fail("content after finish_reason")
		}
		if hasText {
			if out, err = t.text(out, false, *d.Content); err != nil {
				return nil, err
			}
		}
		if hasRefusal {
			if out, err = t.text(out, true, *d.Refusal); err != nil {
				return nil, err
			}
		}
		for _, tc := range d.ToolCalls {
			if out, err = t.toolCall(out, tc); err != nil {
				return nil, err
			}
		}
		if ch.FinishReason != nil && !t.finished {
			if out, err = t.finishItems(out, *ch.FinishReason); err != nil {
				return nil, err
			}
		}
	}
	if in.Usage != nil {
		t.usage = in.Usage
	}
	return out, nil
}

func (t *StreamToResponses) start(in oaChunkIn) ([]Event, error) {
	t.started = true
	t.created = in.Created
	if t.created == 0 {
		t.created = t.cfg.Created
	}
	t.base, t.model = idBase(in.ID, t.created), in.Model
	r := newResponse(t.base, t.model, t.created, "in_progress")
	out, err := t.emit(nil, rsEvent{Type: "response.created", Response: &r})
	if err != nil {
		return nil, err
	}
	return t.emit(out, rsEvent{Type: "response.in_progress", Response: &r})
}

// text adds s to the open message's last part, if it is of the same kind
// (output_text, or a refusal), else opens what it needs: a message item,
// and a part.
func (t *StreamToResponses) text(out []Event, refusal bool, s string) ([]Event, error) {
	var err error
	if t.open < 0 || t.items[t.open].function {
		if out, err = t.closeItem(out, "completed"); err != nil {
			return nil, err
		}
		it := &rsStreamItem{id: itemID("msg", t.base, len(t.items)), status: "in_progress"}
		if out, err = t.addItem(out, it); err != nil {
			return nil, err
		}
	}
	it, oi := t.items[t.open], t.open
	var p *rsStreamPart
	if n := len(it.parts); n > 0 && it.parts[n-1].refusal == refusal {
		p = it.parts[n-1]
	} else {
		if out, err = t.closePart(out); err != nil {
			return nil, err
		}
		p = &rsStreamPart{refusal: refusal}
		it.parts = append(it.parts, p)
		part := p.part()
		if out, err = t.emit(out, rsEvent{Type: "response.content_part.added", ItemID: it.id, OutputIndex: &oi, ContentIndex: ptr(len(it.parts) - 1), Part: &part}); err != nil {
			return nil, err
		}
	}
	p.text.WriteString(s)
	ci := len(it.parts) - 1
	if refusal {
		return t.emit(out, rsEvent{Type: "response.refusal.delta", ItemID: it.id, OutputIndex: &oi, ContentIndex: &ci, Delta: &s})
	}
	return t.emit(out, rsEvent{Type: "response.output_text.delta", ItemID: it.id, OutputIndex: &oi, ContentIndex: &ci, Delta: &s, Logprobs: emptyArray})
}

// toolCall starts a function_call item for a call it has not seen, and
// feeds the arguments of the open one. Items are done one at a time, as
// OpenAI sends them, so a call that comes back after another item began
// cannot be carried.
func (t *StreamToResponses) toolCall(out []Event, tc oaToolCallIn) ([]Event, error) {
	var err error
	i, seen := t.calls[tc.Index]
	if seen && i != t.open {
		return t.fail("tool call %d resumed after another item began", tc.Index)
	}
	if !seen {
		if tc.Function.Name == nil || *tc.Function.Name == "" {
			return t.fail("tool call %d starts without its name", tc.Index)
		}
		if out, err = t.closeItem(out, "completed"); err != nil {
			return nil, err
		}
		n := len(t.items)
		it := &rsStreamItem{function: true, id: itemID("fc", t.base, n), status: "in_progress", callID: tc.ID, name: *tc.Function.Name}
		if it.callID == "" {
			it.callID = itemID("call", t.base, n)
		}
		t.calls[tc.Index] = n
		if out, err = t.addItem(out, it); err != nil {
			return nil, err
		}
	}
	if tc.Function.Arguments == "" {
		return out, nil
	}
	it, oi := t.items[t.open], t.open
	it.args.WriteString(tc.Function.Arguments)
	return t.emit(out, rsEvent{Type: "response.function_call_arguments.delta", ItemID: it.id, OutputIndex: &oi, Delta: &tc.Function.Arguments})
}

func (t *StreamToResponses) addItem(out []Event, it *rsStreamItem) ([]Event, error) {
	t.items = append(t.items, it)
	t.open = len(t.items) - 1
	oi, item := t.open, it.item()
	return t.emit(out, rsEvent{Type: "response.output_item.added", OutputIndex: &oi, Item: &item})
}

// closePart ends the open message's last part: its text (or refusal)
// whole, then the part.
func (t *StreamToResponses) closePart(out []Event) ([]Event, error) {
	it := t.items[t.open]
	if len(it.parts) == 0 {
		return out, nil
	}
	oi, ci := t.open, len(it.parts)-1
	p := it.parts[ci]
	part := p.part()
	var err error
	if p.refusal {
		out, err = t.emit(out, rsEvent{Type: "response.refusal.done", ItemID: it.id, OutputIndex: &oi, ContentIndex: &ci, Refusal: &part.Text})
	} else {
		out, err = t.emit(out, rsEvent{Type: "response.output_text.done", ItemID: it.id, OutputIndex: &oi, ContentIndex: &ci, Text: &part.Text, Logprobs: emptyArray})
	}
	if err != nil {
		return nil, err
	}
	return t.emit(out, rsEvent{Type: "response.content_part.done", ItemID: it.id, OutputIndex: &oi, ContentIndex: &ci, Part: &part})
}

// closeItem ends the open item, if any, with status: a message's last
// part, or a call's arguments whole, then the item.
func (t *StreamToResponses) closeItem(out []Event, status string) ([]Event, error) {
	if t.open < 0 {
		return out, nil
	}
	it, oi := t.items[t.open], t.open
	var err error
	if it.function {
		args := it.args.String()
		out, err = t.emit(out, rsEvent{Type: "response.function_call_arguments.done", ItemID: it.id, OutputIndex: &oi, Arguments: &args, Name: it.name})
	} else {
		out, err = t.closePart(out)
	}
	if err != nil {
		return nil, err
	}
	it.status = status
	item := it.item()
	t.open = -1
	return t.emit(out, rsEvent{Type: "response.output_item.done", OutputIndex: &oi, Item: &item})
}

// finishItems answers the finish_reason: the open item ends, incomplete
// if the answer was cut short. An answer with nothing in it is an empty
// message, as ChatToResponse writes it.
func (t *StreamToResponses) finishItems(out []Event, finish string) ([]Event, error) {
	t.finished, t.finish = true, finish
	status, incomplete := responseStatus(finish)
	itemStatus := "completed"
	if incomplete != nil {
		itemStatus = status
	}
	var err error
	if len(t.items) == 0 {
		it := &rsStreamItem{id: itemID("msg", t.base, 0), status: "in_progress"}
		if out, err = t.addItem(out, it); err != nil {
			return nil, err
		}
		it.parts = []*rsStreamPart{{}}
		part, oi, ci := rsPart{}, 0, 0
		if out, err = t.emit(out, rsEvent{Type: "response.content_part.added", ItemID: it.id, OutputIndex: &oi, ContentIndex: &ci, Part: &part}); err != nil {
			return nil, err
		}
	}
	return t.closeItem(out, itemStatus)
}

// complete answers [DONE]: the whole response, with its usage.
func (t *StreamToResponses) complete() ([]Event, error) {
	if !t.finished {
		return t.fail("[DONE] before any finish_reason")
	}
	status, incomplete := responseStatus(t.finish)
	r := newResponse(t.base, t.model, t.created, status)
	r.IncompleteDetails = incomplete
	r.Usage = usageToResponses(t.usage)
	for _, it := range t.items {
		r.Output = append(r.Output, it.item())
	}
	typ := "response.completed"
	if incomplete != nil {
		typ = "response.incomplete"
	}
	out, err := t.emit(nil, rsEvent{Type: typ, Response: &r})
	if err != nil {
		return nil, err
	}
	t.done = true
	return out, nil
}

// errorEvent renders a chat error chunk as the Responses API's error
// event. Its code is the chat error's code, or else its type.
func (t *StreamToResponses) errorEvent(e *oaErrorInfo) ([]Event, error) {
	ev := rsErrorEvent{Type: "error", Message: messageOr(e.Message, 0), SequenceNumber: t.seq}
	if s, ok := decodeString(e.Code); ok && s != "" {
		ev.Code = &s
	} else if e.Type != "" {
		ev.Code = &e.Type
	}
	if s, ok := decodeString(e.Param); ok {
		ev.Param = &s
	}
	b, err := marshal(ev)
	if err != nil {
		t.err = err
		return nil, err
	}
	t.seq++
	return []Event{{Name: "error", Data: b}}, nil
}

func (t *StreamToResponses) emit(out []Event, ev rsEvent) ([]Event, error) {
	ev.SequenceNumber = t.seq
	b, err := marshal(ev)
	if err != nil {
		t.err = err
		return nil, err
	}
	t.seq++
	return append(out, Event{Name: ev.Type, Data: b}), nil
}

// Close implements Stream.
func (t *StreamToResponses) Close() error { return t.close() }
