package gateway

import (
	"bytes"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// textFilter follows a chat stream's answer as the client gets it, in
// the client's dialect, for the two things the relay needs at its end:
//
//   - the text so far, which a continuation of a broken stream goes on
//     from (relay_continue.go), with what the continuation needs to
//     write its events as the stream's own (the chunk's id and model,
//     the open content block);
//   - whether the stream carried its finish reason: such a stream that
//     closes without its terminator is complete, and gets the terminator
//     its client expects instead of an error event (stream completeness
//     by content).
//
// It holds back an error event the provider sends mid-stream, so that a
// continuation can take its place; when the stream cannot be continued
// the event goes out as it came. Its text is kept in a pooled buffer, so
// a stream that never breaks costs no allocation for it.
type textFilter struct {
	passThrough
	dialect protocol.Dialect // the client's
	// on: a broken stream may be continued (a chat stream with no
	// declared contract); off, the filter only judges completeness.
	on   bool
	text *[]byte // from textPool; nil until the first text
	// deltas counts the text events; tool: a tool call began, which a
	// continuation cannot splice; parts: an event went out in parts, so
	// the text is not known.
	deltas      int
	tool, parts bool
	// finished: the stream carried its finish reason; sawDelta: an
	// Anthropic message_delta went out; sawDone: the terminator did.
	finished, sawDelta, sawDone bool
	// errEvent is a provider's error event held back.
	errEvent []byte
	// OpenAI: the first chunk's data, to read its id, created and model
	// from.
	head  [320]byte
	headN int
	// Anthropic: the last content block's index, and whether it is open.
	block int
	open  bool
	// usage reads the provider's own bytes: its finish reason counts
	// too (a translated stream's may be held by the translator).
	usage *usageMeter
}

// continuable: a continuation could go on from what the client has had
// (text, and nothing a continuation cannot splice).
func (f *textFilter) continuable() bool {
	return f.on && !f.tool && !f.parts && f.text != nil && len(*f.text) > 0
}

var textPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func (f *textFilter) release() {
	if f.text != nil {
		*f.text = (*f.text)[:0]
		textPool.Put(f.text)
		f.text = nil
	}
}

// soFar is the text the client has had.
func (f *textFilter) soFar() []byte {
	if f.text == nil {
		return nil
	}
	return *f.text
}

func (f *textFilter) addText(t []byte) {
	if len(t) == 0 {
		return
	}
	if f.text == nil {
		f.text = textPool.Get().(*[]byte)
	}
	*f.text = append(*f.text, t...)
}

var (
	keyContent     = []byte(`"content":"`)
	keyText        = []byte(`"text":"`)
	keyToolCalls   = []byte(`"tool_calls"`)
	keyFinish      = []byte(`"finish_reason":"`)
	keyStop        = []byte(`"stop_reason":"`)
	keyIndex       = []byte(`"index":`)
	typeTextDelta  = []byte(`"type":"text_delta"`)
	typeBlockStart = []byte(`"type":"content_block_start"`)
	typeBlockStop  = []byte(`"type":"content_block_stop"`)
	typeTextBlock  = []byte(`"content_block":{"type":"text"`)
	typeJSONDelta  = []byte(`"type":"input_json_delta"`)
	typeMsgDelta   = []byte(`"type":"message_delta"`)
	typeMsgStop    = []byte(`"type":"message_stop"`)
	typeError      = []byte(`"type":"error"`)
	eventError     = []byte("event: error")
	dataDone       = []byte("data: [DONE]")
	errorKey       = []byte(`"error":`)
	choicesKey     = []byte(`"choices"`)
)

func (f *textFilter) events(p []byte, whole bool) ([]byte, error) {
	if !whole {
		f.parts = true
		return p, nil
	}
	for off := 0; off < len(p); {
		end := off + eventEnd(p[off:])
		ev := p[off:end]
		if f.on && f.isError(ev) {
			// Held back: a continuation may take its place.
			f.errEvent = append([]byte(nil), p[off:]...)
			return p[:off], upstreamEnd(protocol.StreamErrorEvent, "")
		}
		f.see(ev)
		off = end
	}
	return p, nil
}

func (f *textFilter) isError(ev []byte) bool {
	if f.dialect == protocol.Anthropic {
		return bytes.Contains(ev, eventError) || bytes.Contains(ev, typeError)
	}
	return bytes.Contains(ev, errorKey) && !bytes.Contains(ev, choicesKey)
}

// see reads one whole event.
func (f *textFilter) see(ev []byte) {
	if f.dialect == protocol.Anthropic {
		switch {
		case bytes.Contains(ev, typeTextDelta):
			if i := bytes.Index(ev, keyText); i >= 0 && f.on {
				f.addString(ev[i+len(keyText):])
			}
			f.deltas++
		case bytes.Contains(ev, typeJSONDelta):
			f.tool = true
		case bytes.Contains(ev, typeBlockStart):
			f.block, f.open = jsonInt(ev, keyIndex), true
			if !bytes.Contains(ev, typeTextBlock) {
				// A tool call, a server tool's call or result, a thinking
				// block: nothing a text continuation can splice.
				f.tool = true
			}
		case bytes.Contains(ev, typeBlockStop):
			f.open = false
		case bytes.Contains(ev, typeMsgDelta):
			f.sawDelta = true
			f.finished = f.finished || bytes.Contains(ev, keyStop)
		case bytes.Contains(ev, typeMsgStop):
			f.finished, f.sawDone = true, true
		}
		return
	}
	if bytes.Contains(ev, dataDone) {
		f.finished, f.sawDone = true, true
		return
	}
	if f.headN == 0 {
		if i := bytes.Index(ev, []byte("data:")); i >= 0 {
			f.headN = copy(f.head[:], ev[i:])
		}
	}
	if bytes.Contains(ev, keyToolCalls) {
		f.tool = true
	}
	if i := bytes.Index(ev, keyContent); i >= 0 && i+len(keyContent) < len(ev) && ev[i+len(keyContent)] != '"' {
		if f.on {
			f.addString(ev[i+len(keyContent):])
		}
		f.deltas++ // a token: the role chunk's empty content is none
	}
	if bytes.Contains(ev, keyFinish) {
		f.finished = true
	}
}

// addString appends the JSON string that starts at b (past its opening
// quote), unescaped, to the text.
func (f *textFilter) addString(b []byte) {
	if f.text == nil {
		f.text = textPool.Get().(*[]byte)
	}
	*f.text = appendJSONString(*f.text, b)
}

// appendJSONString appends the JSON string at b (past its opening
// quote, up to its closing one), unescaped, to dst.
func appendJSONString(dst, b []byte) []byte {
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			return dst
		case c != '\\':
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(b) {
			return dst
		}
		switch b[i] {
		case 'n':
			dst = append(dst, '\n')
		case 't':
			dst = append(dst, '\t')
		case 'r':
			dst = append(dst, '\r')
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			if i+4 >= len(b) {
				return dst
			}
			r := rune(hex4(b[i+1 : i+5]))
			i += 4
			if utf16.IsSurrogate(r) && i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
				r2 := rune(hex4(b[i+3 : i+7]))
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 6
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // \" \\ \/
			dst = append(dst, b[i])
		}
	}
	return dst
}

func hex4(b []byte) int {
	n := 0
	for _, c := range b {
		n <<= 4
		switch {
		case c >= '0' && c <= '9':
			n |= int(c - '0')
		case c >= 'a' && c <= 'f':
			n |= int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			n |= int(c-'A') + 10
		}
	}
	return n
}

// jsonInt reads the integer after key in b (0 if none).
func jsonInt(b, key []byte) int {
	i := bytes.Index(b, key)
	if i < 0 {
		return 0
	}
	j := i + len(key)
	for j < len(b) && b[j] == ' ' {
		j++
	}
	k := j
	for k < len(b) && b[k] >= '0' && b[k] <= '9' {
		k++
	}
	n, _ := strconv.Atoi(string(b[j:k]))
	return n
}

// jsonString reads the string value after "key": in b ("" if none).
func jsonString(b []byte, key string) string {
	k := []byte(`"` + key + `":"`)
	i := bytes.Index(b, k)
	if i < 0 {
		return ""
	}
	return string(appendJSONString(nil, b[i+len(k):]))
}

// end: a stream that closed without its terminator, having carried its
// finish reason, is complete: it gets the events its client expects to
// end it with, instead of an error event.
func (f *textFilter) end(err error) ([]byte, error) {
	e, ok := err.(*streamEnd)
	if !ok || e.reason != protocol.StreamUnterminated || !f.finished && f.usage.u.FinishReason() == "" {
		return nil, err
	}
	return f.terminator(), nil
}

// terminator is what ends a stream that carried its finish reason but
// not its terminator, in the client's dialect.
func (f *textFilter) terminator() []byte {
	if f.dialect == protocol.Anthropic {
		var b []byte
		if f.open {
			b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
			b = strconv.AppendInt(b, int64(f.block), 10)
			b = append(b, "}\n\n"...)
		}
		if !f.sawDelta {
			b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
			b = strconv.AppendQuote(b, translate.StopReason(f.usage.u.FinishReason()))
			b = append(b, ",\"stop_sequence\":null},\"usage\":{\"output_tokens\":0}}\n\n"...)
		}
		return append(b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	}
	return []byte("data: [DONE]\n\n")
}
