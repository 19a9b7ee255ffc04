package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Reply reads one generateContent call's answer into the hub's. Model is
// the request's model, the answer's when Gemini names none.
type Reply struct {
	Model string
}

var _ native.Reply = Reply{}

func badResponse(format string, args ...any) error {
	return fmt.Errorf("%w: gemini: %s", translate.ErrResponse, fmt.Sprintf(format, args...))
}

// stopReason is the hub's stop_reason for Gemini's finishReason; tool
// says the answer called a function.
func stopReason(finish string, tool bool) string {
	switch finish {
	case "MAX_TOKENS":
		return "max_tokens"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", blocked:
		return "refusal"
	}
	if tool {
		return "tool_use"
	}
	return "end_turn"
}

// blocked stands for a promptFeedback.blockReason: the prompt itself was
// refused, and there is no candidate.
const blocked = "\x00blocked"

func usageOf(u *gmUsage) native.Usage {
	h := native.Usage{CacheCreationInputTokens: ptr(int64(0)), CacheReadInputTokens: ptr(int64(0))}
	if u == nil {
		return h
	}
	get := func(p *int64) int64 {
		if p == nil || *p < 0 {
			return 0
		}
		return *p
	}
	prompt, cached := get(u.PromptTokenCount), get(u.CachedContentTokenCount)
	cached = min(cached, prompt)
	h.InputTokens = prompt - cached
	h.CacheReadInputTokens = ptr(cached)
	h.OutputTokens = addSat(get(u.CandidatesTokenCount), get(u.ThoughtsTokenCount))
	return h
}

// addSat adds two counts that are not negative, stopping at the largest.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func msgID(responseID string) string {
	if responseID == "" {
		return "msg_gemini"
	}
	return "msg_" + responseID
}

func (r Reply) modelOf(version string) string {
	if version != "" {
		return version
	}
	return r.Model
}

// toolID is a functionCall's id, or one made up from its place in the
// answer.
func toolID(id string, n int) string {
	if id != "" {
		return id
	}
	return madeUpID + strconv.Itoa(n)
}

func args(raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return json.RawMessage("{}"), nil
	}
	raw = bytes.TrimSpace(raw)
	if raw[0] != '{' {
		return nil, badResponse("a functionCall's args are not an object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, badResponse("a functionCall's args are not JSON")
	}
	return buf.Bytes(), nil
}

// Answer implements native.Reply. Gemini's thought summaries (parts with
// thought: true, sent only when asked for) are skipped, as Sluice never
// asks; their tokens count in output_tokens.
func (r Reply) Answer(body []byte) ([]byte, error) {
	var g gmResponse
	if err := json.Unmarshal(body, &g); err != nil {
		return nil, badResponse("the answer is not a GenerateContentResponse: %v", err)
	}
	if g.Error != nil {
		return nil, badResponse("a 2xx answer carries an error: %s", g.Error.Message)
	}
	out := native.Answer{
		ID: msgID(g.ResponseID), Type: "message", Role: "assistant", Model: r.modelOf(g.ModelVersion),
		Content: []native.Block{}, Usage: usageOf(g.UsageMetadata),
	}
	if len(g.Candidates) == 0 {
		if g.PromptFeedback == nil || g.PromptFeedback.BlockReason == "" {
			return nil, badResponse("the answer has neither a candidate nor a block reason")
		}
		out.StopReason = ptr(stopReason(blocked, false))
		return json.Marshal(out)
	}
	cand := g.Candidates[0]
	tools := 0
	// Consecutive text parts are one text block, built in text: joined
	// pair by pair, an answer of many small parts cost time in the square
	// of its length (250,000 parts of 3.25 MB, 12.6 s).
	var text strings.Builder
	endText := func() {
		if text.Len() > 0 {
			out.Content = append(out.Content, native.Block{Type: "text", Text: ptr(text.String())})
			text.Reset()
		}
	}
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				if p.FunctionCall.Name == "" {
					return nil, badResponse("a functionCall has no name")
				}
				a, err := args(p.FunctionCall.Args)
				if err != nil {
					return nil, err
				}
				endText()
				out.Content = append(out.Content, native.Block{Type: "tool_use", ID: toolID(p.FunctionCall.ID, tools), Name: p.FunctionCall.Name, Input: a})
				tools++
			case p.Thought:
			case p.Text != nil && *p.Text != "":
				text.WriteString(*p.Text)
			case p.InlineData != nil, p.FileData != nil:
				return nil, badResponse("the answer holds media, which the hub's answer has no block for")
			}
		}
	}
	endText()
	out.StopReason = ptr(stopReason(cand.FinishReason, tools > 0))
	return json.Marshal(out)
}

// Stream implements native.Reply: Gemini's alt=sse stream (data: chunks,
// each a GenerateContentResponse, no terminator) as the hub's events.
func (r Reply) Stream(rd io.Reader) native.Events {
	return &events{r: rd, model: r.Model}
}

type events struct {
	r     io.Reader
	model string
	buf   []byte
	dirty bool // buf holds a line end not yet parsed
	eof   bool

	started bool
	finish  string // the finishReason seen, "" until then
	done    bool   // message_stop went out
	failed  bool   // an error event went out
	err     error

	open  bool // a text block is open at index next-1
	next  int  // the next block's index
	tools int
	usage *gmUsage
}

const readSize = 32 << 10

// Next implements native.Events.
func (e *events) Next() ([]byte, error) {
	for {
		switch {
		case e.err != nil:
			return nil, e.err
		case e.failed:
			return nil, translate.ErrStreamFailed
		case e.done:
			return nil, io.EOF
		}
		var out []byte
		if e.dirty {
			evs, n := translate.ParseEvents(e.buf)
			e.buf = append(e.buf[:0], e.buf[n:]...)
			e.dirty = false
			for _, ev := range evs {
				out = e.chunk(out, ev.Data)
				if e.err != nil || e.failed {
					break
				}
			}
			if len(out) > 0 {
				return out, nil
			}
			if e.err != nil {
				return nil, e.err
			}
		}
		if len(e.buf) > native.MaxEvent {
			e.err = badResponse("a stream event is over %d bytes", native.MaxEvent)
			return nil, e.err
		}
		if e.eof {
			return e.end()
		}
		space := min(readSize, native.MaxEvent+1-len(e.buf))
		e.buf = growTo(e.buf, len(e.buf)+space)
		n, err := e.r.Read(e.buf[len(e.buf) : len(e.buf)+space])
		from := len(e.buf)
		e.buf = e.buf[:from+n]
		if endsEvent(e.buf, from) {
			e.dirty = true
		}
		if err == io.EOF {
			e.eof = true
		} else if err != nil {
			return nil, err
		}
	}
}

// growTo makes room for n bytes in b, growing it as append does, so
// that small reads do not copy the buffer each time.
func growTo(b []byte, n int) []byte {
	return slices.Grow(b, n-len(b))
}

// end is the stream's end: the hub's tail after a finishReason, else a
// truncated stream with nothing made up.
func (e *events) end() ([]byte, error) {
	var out []byte
	if len(bytes.TrimSpace(e.buf)) > 0 {
		// The last event lost its blank line: whole if its data is JSON.
		evs, _ := translate.ParseEvents(append(e.buf, "\n\n"...))
		e.buf = nil
		for _, ev := range evs {
			if len(ev.Data) > 0 && !json.Valid(ev.Data) {
				e.err = translate.ErrTruncated
				return out, nil
			}
			out = e.chunk(out, ev.Data)
			if e.err != nil || e.failed {
				return out, nil
			}
		}
	}
	if e.finish == "" {
		e.err = translate.ErrTruncated
		return out, nil
	}
	out = e.closeBlock(out)
	u := usageOf(e.usage)
	delta := struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage struct {
			InputTokens          int64 `json:"input_tokens"`
			CacheReadInputTokens int64 `json:"cache_read_input_tokens"`
			OutputTokens         int64 `json:"output_tokens"`
		} `json:"usage"`
	}{Type: "message_delta"}
	delta.Delta.StopReason = stopReason(e.finish, e.tools > 0)
	delta.Usage.InputTokens, delta.Usage.CacheReadInputTokens, delta.Usage.OutputTokens = u.InputTokens, *u.CacheReadInputTokens, u.OutputTokens
	out = appendEvent(out, "message_delta", delta)
	out = appendEvent(out, "message_stop", map[string]string{"type": "message_stop"})
	e.done = true
	return out, nil
}

func appendEvent(out []byte, name string, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // this package's own values always marshal
	}
	return translate.AppendEvent(out, translate.Event{Name: name, Data: data})
}

func (e *events) closeBlock(out []byte) []byte {
	if !e.open {
		return out
	}
	e.open = false
	return appendEvent(out, "content_block_stop", map[string]any{"type": "content_block_stop", "index": e.next - 1})
}

// chunk turns one Gemini chunk into hub events appended to out. It sets
// e.err for a chunk that is not well-formed, e.failed for an error.
func (e *events) chunk(out []byte, data []byte) []byte {
	if len(bytes.TrimSpace(data)) == 0 {
		return out
	}
	var g gmResponse
	if err := json.Unmarshal(data, &g); err != nil {
		e.err = badResponse("a stream chunk is not a GenerateContentResponse: %v", err)
		return out
	}
	if g.Error != nil {
		_, typ := hubStatus(g.Error.Status, g.Error.Code)
		msg := g.Error.Message
		if msg == "" {
			msg = "Gemini's stream failed"
		}
		e.failed = true
		return appendEvent(out, "error", errorBody{Type: "error", Error: errorInfo{Type: typ, Message: msg}})
	}
	if g.UsageMetadata != nil {
		e.usage = g.UsageMetadata
	}
	if !e.started {
		e.started = true
		u := usageOf(g.UsageMetadata)
		u.OutputTokens = 1
		out = appendEvent(out, "message_start", map[string]any{"type": "message_start", "message": native.Answer{
			ID: msgID(g.ResponseID), Type: "message", Role: "assistant", Model: Reply{Model: e.model}.modelOf(g.ModelVersion),
			Content: []native.Block{}, Usage: u,
		}})
	}
	if len(g.Candidates) == 0 {
		if g.PromptFeedback != nil && g.PromptFeedback.BlockReason != "" {
			e.finish = blocked
		}
		return out
	}
	cand := g.Candidates[0]
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				if p.FunctionCall.Name == "" {
					e.err = badResponse("a functionCall has no name")
					return out
				}
				a, err := args(p.FunctionCall.Args)
				if err != nil {
					e.err = err
					return out
				}
				out = e.closeBlock(out)
				i := e.next
				e.next++
				out = appendEvent(out, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
					"content_block": native.Block{Type: "tool_use", ID: toolID(p.FunctionCall.ID, e.tools), Name: p.FunctionCall.Name, Input: json.RawMessage("{}")}})
				out = appendEvent(out, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]string{"type": "input_json_delta", "partial_json": string(a)}})
				out = appendEvent(out, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
				e.tools++
			case p.Thought:
			case p.Text != nil && *p.Text != "":
				if !e.open {
					out = appendEvent(out, "content_block_start", map[string]any{"type": "content_block_start", "index": e.next,
						"content_block": native.Block{Type: "text", Text: ptr("")}})
					e.open = true
					e.next++
				}
				out = appendEvent(out, "content_block_delta", map[string]any{"type": "content_block_delta", "index": e.next - 1,
					"delta": map[string]string{"type": "text_delta", "text": *p.Text}})
			case p.InlineData != nil, p.FileData != nil:
				e.err = badResponse("the stream holds media, which the hub's stream has no block for")
				return out
			}
		}
	}
	if cand.FinishReason != "" && cand.FinishReason != "FINISH_REASON_UNSPECIFIED" {
		e.finish = cand.FinishReason
	}
	return out
}

// endsEvent reports whether buf, of which the bytes from from on are new,
// now holds a blank line that the old bytes did not: two line ends in a
// row ("\n\n", "\r\r", or "\n\r", which "\r\n\r" and "\r\n\r\n" hold).
// Parsing only then keeps a long event, arriving in small reads, from
// being scanned again at every read.
func endsEvent(buf []byte, from int) bool {
	w := buf[max(from-1, 0):]
	return bytes.Contains(w, []byte("\n\n")) || bytes.Contains(w, []byte("\r\r")) || bytes.Contains(w, []byte("\n\r"))
}
