package gateway

import (
	"strconv"
	"sync"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// answerState is the relay's view of the answer as the client has had
// it, in the client's dialect, read from the check that reads what the
// client gets (the source's own, or the translation's: client). It
// serves the two things the relay does at a stream's end:
//
//   - a broken stream is continued from the exact text the client has
//     had, never from anything else, and the continuation's events are
//     written as the stream's own (its id, model and created; the open
//     content block);
//   - a stream that carried its finish reason but closed without its
//     terminator is complete, and gets the terminator its client
//     expects (terminator).
//
// The text is kept in a pooled buffer, so a stream that never breaks
// costs no allocation for it.
type answerState struct {
	dialect protocol.Dialect // the client's
	// on: a broken stream may be continued (a chat stream with no
	// declared contract); off, the state only ends streams complete by
	// content.
	on     bool
	client *protocol.StreamCheck
	text   *[]byte // from textPool; the text the client has had
	// The stream's identity, read once from the client's check when a
	// continuation first writes, and its content block then.
	identity bool
	id       string
	model    string
	created  int64
	block    int
	open     bool
	blocks   bool // a content block has been opened
	// What the continuations added: their output, whether every one
	// was counted by its provider, their input, the last one's finish
	// reason; conts names the one that finished, for the log.
	contTokens int
	contKnown  bool
	contInput  int64
	finish     string
	// orig is the committed call's facts, kept when a continuation
	// takes its source's place.
	// heldErr is the committed call's error event, held back when a
	// continuation took its place.
	heldErr      []byte
	orig         protocol.StreamFacts
	origKept     bool
	origProvider string
}

var textPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// start begins the state for a stream whose client's dialect is d, read
// by client; on says whether it may be continued, and then the text is
// captured. text is a buffer the check already captures into (the
// head's text, read before the relay began), or nil.
func (a *answerState) start(client *protocol.StreamCheck, d protocol.Dialect, on bool, text *[]byte) {
	a.client, a.dialect, a.on, a.contKnown = client, d, on, true
	a.text = text
	if a.text == nil && on {
		a.text = textPool.Get().(*[]byte)
		client.CaptureText(a.text)
	}
}

func (a *answerState) release() {
	if a.text != nil {
		*a.text = (*a.text)[:0]
		textPool.Put(a.text)
		a.text = nil
	}
}

// soFar is the text the client has had.
func (a *answerState) soFar() []byte {
	if a.text == nil {
		return nil
	}
	return *a.text
}

// addText records text a continuation wrote.
func (a *answerState) addText(t []byte) {
	if a.text != nil {
		*a.text = append(*a.text, t...)
	}
}

// heldError: the event of marks[i], a provider's error event, is held
// back, and so is what the check read after it: the text they carried
// has not reached the client.
func (a *answerState) heldError(marks []protocol.EventMark, i int) {
	if a.text != nil && a.client != nil && marks[i].Captured >= 0 && marks[i].Captured <= len(*a.text) {
		*a.text = (*a.text)[:marks[i].Captured]
	}
}

// keepOrig keeps the committed call's facts before its source goes.
func (a *answerState) keepOrig(f *protocol.StreamFacts) {
	if !a.origKept {
		a.orig, a.origKept = *f, true
	}
}

// takeIdentity reads the stream's identity and open block from what the
// client has had, once.
func (a *answerState) takeIdentity() {
	if a.identity {
		return
	}
	a.identity = true
	f := a.client.Facts()
	a.id, a.model, a.created = f.ID(), f.Model(), f.Created
	a.block, a.open, a.blocks = f.Block, f.Open, f.Deltas > 0 || f.Block > 0 || f.Open
}

// appendTextEvent appends text as one of the stream's own text events,
// in the client's dialect.
func (a *answerState) appendTextEvent(b, text []byte) []byte {
	a.takeIdentity()
	if a.dialect == protocol.Anthropic {
		if !a.open {
			if a.blocks {
				a.block++ // a new block after the last
			}
			a.blocks = true
			b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
			b = strconv.AppendInt(b, int64(a.block), 10)
			b = append(b, ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"...)
			a.open = true
		}
		b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
		b = strconv.AppendInt(b, int64(a.block), 10)
		b = append(b, ",\"delta\":{\"type\":\"text_delta\",\"text\":"...)
		b = jsonQuote(b, text)
		return append(b, "}}\n\n"...)
	}
	b = a.chunkHead(b)
	b = append(b, `"choices":[{"index":0,"delta":{"content":`...)
	b = jsonQuote(b, text)
	return append(b, "},\"finish_reason\":null}]}\n\n"...)
}

// chunkHead begins an OpenAI chunk as the stream's own: its id, created
// and model.
func (a *answerState) chunkHead(b []byte) []byte {
	b = append(b, `data: {"id":`...)
	b = jsonQuote(b, []byte(a.id))
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, a.created, 10)
	b = append(b, `,"model":`...)
	b = jsonQuote(b, []byte(a.model))
	return append(b, ',')
}

// answerUsage is what an ending reports: the prompt and the output summed
// over the attempts.
type answerUsage struct{ input, output int64 }

// appendEnding ends the stream in the client's dialect: the finish
// reason (in the provider's words; each dialect's own is written), the
// usage when the client gets one, the terminator. finished says a
// finish reason has already gone to the client (Anthropic's
// message_delta, which carries the usage too); withUsage, that an
// OpenAI client asked for the usage chunk.
func (a *answerState) appendEnding(b []byte, finish string, finished bool, u answerUsage, withUsage bool) []byte {
	a.takeIdentity()
	if a.dialect == protocol.Anthropic {
		if a.open {
			b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
			b = strconv.AppendInt(b, int64(a.block), 10)
			b = append(b, "}\n\n"...)
			a.open = false
		}
		if !finished {
			b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
			b = jsonQuote(b, []byte(translate.StopReason(finish)))
			b = append(b, ",\"stop_sequence\":null},\"usage\":{\"input_tokens\":"...)
			b = strconv.AppendInt(b, u.input, 10)
			b = append(b, ",\"output_tokens\":"...)
			b = strconv.AppendInt(b, u.output, 10)
			b = append(b, "}}\n\n"...)
		}
		return append(b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	}
	if !finished {
		b = a.finishChunk(b, finish, 1)
	}
	if withUsage {
		b = a.usageChunk(b, u)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// finishChunk appends the OpenAI chunk that ends n answers (choices 0
// to n-1) with finish, in OpenAI's words.
func (a *answerState) finishChunk(b []byte, finish string, n int) []byte {
	b = a.chunkHead(b)
	b = append(b, `"choices":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"delta":{},"finish_reason":`...)
		b = jsonQuote(b, []byte(translate.FinishReason(finish)))
		b = append(b, '}')
	}
	return append(b, "]}\n\n"...)
}

// usageChunk appends the OpenAI usage chunk (stream_options.include_usage)
// with u.
func (a *answerState) usageChunk(b []byte, u answerUsage) []byte {
	b = a.chunkHead(b)
	b = append(b, `"choices":[],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, u.input, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, u.output, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.input+u.output, 10)
	return append(b, "}}\n\n"...)
}

// terminator ends a stream that carried its finish reason but closed
// without its terminator: what the client has not had of its ending,
// from what the provider said (its finish reason and usage).
func (a *answerState) terminator(s *streamRelay) []byte {
	c, p := a.client.Facts(), s.src.check.Facts()
	out, _ := p.Tokens()
	in, _ := p.InputTokens()
	finished := c.FinishReason() != ""
	_, counted := c.Tokens()
	withUsage := a.dialect == protocol.OpenAI && s.wantsUsage() && !counted
	return a.appendEnding(nil, p.FinishReason(), finished, answerUsage{input: in, output: int64(out)}, withUsage)
}

// jsonQuote appends s as a JSON string.
func jsonQuote(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
