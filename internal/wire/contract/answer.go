package contract

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// maxChoices bounds the choices a stream's collector keeps apart; a
// chunk naming a higher index makes the answer invalid (OpenAI's n is
// rarely above a handful).
const maxChoices = 16

// ParseAnswer reads a whole (non-streamed) 2xx answer in dialect d.
func ParseAnswer(d protocol.Dialect, body []byte) (Answer, error) {
	if d == protocol.Anthropic {
		var m struct {
			Content []struct {
				Type  string          `json:"type"`
				Text  string          `json:"text"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			return Answer{}, fmt.Errorf("the answer is not a message: %v", err)
		}
		var ch Choice
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				ch.Text = append(ch.Text, b.Text...)
			case "tool_use":
				ch.Calls = append(ch.Calls, Call{Name: b.Name, Args: b.Input})
			}
		}
		return Answer{Choices: []Choice{ch}}, nil
	}
	var m struct {
		Choices []struct {
			Message struct {
				Content   json.RawMessage `json:"content"`
				Refusal   string          `json:"refusal"`
				ToolCalls []struct {
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return Answer{}, fmt.Errorf("the answer is not a chat completion: %v", err)
	}
	a := Answer{Choices: make([]Choice, len(m.Choices))}
	for i, c := range m.Choices {
		ch := &a.Choices[i]
		ch.Text = contentText(c.Message.Content)
		ch.Refusal = c.Message.Refusal
		for _, tc := range c.Message.ToolCalls {
			ch.Calls = append(ch.Calls, Call{Name: tc.Function.Name, Args: []byte(tc.Function.Arguments)})
		}
	}
	return a, nil
}

// contentText is an OpenAI message's content: a string, or the text of
// an array of parts.
func contentText(raw json.RawMessage) []byte {
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var out []byte
	if json.Unmarshal(raw, &parts) == nil {
		for _, p := range parts {
			out = append(out, p.Text...)
		}
	}
	return out
}

// Collector gathers, from a stream's events as they pass, the parts of
// the answer a contract checks: each choice's text and each tool call's
// name and arguments, and nothing else. It holds at most MaxAnswerBytes
// of them; past that the answer is judged too large. Feed it the stream's
// bytes in the client's dialect, in any cuts.
type Collector struct {
	d       protocol.Dialect
	line    []byte // a line not yet ended
	choices []streamChoice
	held    int
	over    bool
	err     error
}

type streamChoice struct {
	text    []byte
	refusal []byte
	calls   []Call
	// names are OpenAI's tool call names as they arrive, in pieces
	// (one per call, by index): joined at the end, not piece by piece,
	// which costs time in the square of the pieces.
	names [][]byte
	// block maps an Anthropic content block's index to its call (-1: a
	// text block or another kind).
	block map[int]int
}

// NewCollector starts collecting a stream in dialect d.
func NewCollector(d protocol.Dialect) *Collector { return &Collector{d: d} }

// maxLine bounds one SSE line the collector holds whole; a longer data
// line cannot be a well-formed event the gateway relayed.
const maxLine = 256 << 10

// Write takes the next bytes of the stream.
func (k *Collector) Write(p []byte) {
	for len(p) > 0 && !k.over && k.err == nil {
		i := bytes.IndexByte(p, '\n')
		end := i
		if i < 0 {
			end = len(p)
		}
		// Every line is held to maxLine, whole or in pieces, so that
		// the verdict does not depend on how the stream was cut.
		if len(k.line)+end > maxLine {
			k.over = true
			return
		}
		if i < 0 {
			k.line = append(k.line, p...)
			return
		}
		line := p[:i]
		if len(k.line) > 0 {
			k.line = append(k.line, line...)
			line = k.line
		}
		k.event(bytes.TrimRight(line, "\r"))
		k.line = k.line[:0]
		p = p[i+1:]
	}
}

// Answer is what was collected; ErrTooLarge when it grew past
// MaxAnswerBytes, or another error when an event did not parse.
func (k *Collector) Answer() (Answer, error) {
	if k.over {
		return Answer{}, ErrTooLarge
	}
	if k.err != nil {
		return Answer{}, k.err
	}
	a := Answer{Choices: make([]Choice, len(k.choices))}
	for i, c := range k.choices {
		for j, n := range c.names {
			c.calls[j].Name = string(n)
		}
		a.Choices[i] = Choice{Text: c.text, Refusal: string(c.refusal), Calls: c.calls}
	}
	return a, nil
}

func (k *Collector) choice(i int) *streamChoice {
	if i < 0 || i >= maxChoices {
		k.err = fmt.Errorf("the stream names choice %d; the gateway checks at most %d", i, maxChoices)
		return nil
	}
	for len(k.choices) <= i {
		k.choices = append(k.choices, streamChoice{})
	}
	return &k.choices[i]
}

// add counts n more held bytes.
func (k *Collector) add(n int) bool {
	k.held += n
	if k.held > MaxAnswerBytes {
		k.over = true
		return false
	}
	return true
}

func (k *Collector) event(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return // [DONE], or nothing
	}
	if k.d == protocol.Anthropic {
		k.anthropic(data)
	} else {
		k.openAI(data)
	}
}

func (k *Collector) openAI(data []byte) {
	var c struct {
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Content   *string `json:"content"`
				Refusal   *string `json:"refusal"`
				ToolCalls []struct {
					Index    int `json:"index"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &c) != nil {
		return // not a chunk: the stream check judges the stream itself
	}
	for _, ch := range c.Choices {
		sc := k.choice(ch.Index)
		if sc == nil {
			return
		}
		d := ch.Delta
		if d.Content != nil {
			if !k.add(len(*d.Content)) {
				return
			}
			sc.text = append(sc.text, *d.Content...)
		}
		if d.Refusal != nil {
			if !k.add(len(*d.Refusal)) {
				return
			}
			sc.refusal = append(sc.refusal, *d.Refusal...)
		}
		for _, tc := range d.ToolCalls {
			if tc.Index < 0 || tc.Index >= MaxTools {
				k.err = fmt.Errorf("the stream names tool call %d; the gateway checks at most %d", tc.Index, MaxTools)
				return
			}
			for len(sc.calls) <= tc.Index {
				sc.calls = append(sc.calls, Call{})
				sc.names = append(sc.names, nil)
			}
			call := &sc.calls[tc.Index]
			if !k.add(len(tc.Function.Name) + len(tc.Function.Arguments)) {
				return
			}
			sc.names[tc.Index] = append(sc.names[tc.Index], tc.Function.Name...)
			call.Args = append(call.Args, tc.Function.Arguments...)
		}
	}
}

func (k *Collector) anthropic(data []byte) {
	var e struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"content_block"`
		Delta struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
		} `json:"delta"`
	}
	if json.Unmarshal(data, &e) != nil {
		return
	}
	sc := k.choice(0)
	if sc == nil {
		return
	}
	switch e.Type {
	case "content_block_start":
		if sc.block == nil {
			sc.block = map[int]int{}
		}
		if e.ContentBlock.Type != "tool_use" {
			sc.block[e.Index] = -1
			return
		}
		if len(sc.calls) >= MaxTools {
			k.err = fmt.Errorf("the stream makes more than %d tool calls", MaxTools)
			return
		}
		if !k.add(len(e.ContentBlock.Name)) {
			return
		}
		sc.block[e.Index] = len(sc.calls)
		sc.calls = append(sc.calls, Call{Name: e.ContentBlock.Name})
	case "content_block_delta":
		switch e.Delta.Type {
		case "text_delta":
			if !k.add(len(e.Delta.Text)) {
				return
			}
			sc.text = append(sc.text, e.Delta.Text...)
		case "input_json_delta":
			i, ok := sc.block[e.Index]
			if !ok || i < 0 {
				return
			}
			if !k.add(len(e.Delta.PartialJSON)) {
				return
			}
			sc.calls[i].Args = append(sc.calls[i].Args, e.Delta.PartialJSON...)
		}
	}
}
