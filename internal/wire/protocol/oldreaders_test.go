package protocol

// The stream readers as they were before events were read by their
// meaning: byte-pattern scans, kept here only so that the benchmarks
// can set the event reader's cost beside theirs.

import "bytes"

type oldStreamCheck struct {
	dialect   Dialect
	responses bool // a Responses API stream (responses.go)

	st     uint8 // where in a line the scan is
	field  [8]byte
	fieldN uint8
	kind   uint8 // the current line's field: fData, fEvent, fOther

	// The current event.
	begun   bool // a line of it has been seen
	hasData bool
	dataLen int
	json    JSONScanner
	head    [48]byte // the start of its data, to read its type
	headN   uint8
	name    [24]byte // its event: name
	nameN   uint8

	terminated  bool // the dialect's terminator has been seen
	upstreamErr bool // the provider sent an error event
	bad         bool // an event was not well-formed
}

// Feed scans the next chunk. boundary is the offset in p just past the
// last complete event in it (its terminating blank line), or -1 if no
// event ended in p. ok is false once an event has proved malformed; then
// badStart is where that event began in p, or -1 if it began in an
// earlier chunk, and Feed scans nothing more.
func (c *oldStreamCheck) Feed(p []byte) (boundary int, ok bool, badStart int) {
	boundary, badStart = -1, -1
	if c.bad {
		return boundary, false, badStart
	}
	evStart := -1
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch c.st {
		case lnAfterCR:
			c.st = lnStart
			if b == '\n' {
				continue
			}
			i-- // a lone CR ended the line; rescan b at a line start
			continue
		case lnStart:
			if b == '\n' || b == '\r' {
				// A blank line dispatches the event.
				if c.begun {
					if !c.dispatch() {
						return boundary, false, evStart
					}
				}
				if b == '\r' {
					c.st = lnAfterCR
				}
				boundary, evStart = i+1, -1
				if b == '\r' && i+1 < len(p) && p[i+1] == '\n' {
					boundary = i + 2
				}
				continue
			}
			if !c.begun {
				c.begun, evStart = true, i
			}
			if b == ':' {
				c.st = lnSkip
				continue
			}
			c.st, c.fieldN = lnField, 0
			i--
		case lnField:
			if b == ':' || b == '\n' || b == '\r' {
				c.kind = fOther
				if int(c.fieldN) <= len(c.field) {
					c.kind = fieldKind(c.field[:c.fieldN])
				}
				if c.kind == fData {
					c.startData()
				}
				if b == ':' {
					c.st = lnSpace
					continue
				}
				c.endLine(b)
				continue
			}
			if int(c.fieldN) < len(c.field) {
				c.field[c.fieldN] = b
			}
			if c.fieldN < 255 {
				c.fieldN++
			}
		case lnSpace:
			c.st = lnValue
			if b == ' ' {
				continue
			}
			i--
		case lnValue:
			// Take the rest of the value in one slice.
			j := i
			for j < len(p) && p[j] != '\n' && p[j] != '\r' {
				j++
			}
			c.value(p[i:j])
			if j == len(p) {
				i = j
				continue
			}
			c.endLine(p[j])
			i = j
		case lnSkip:
			if b == '\n' {
				c.st = lnStart
			} else if b == '\r' {
				c.st = lnAfterCR
			}
		}
	}
	return boundary, true, -1
}

// endLine ends a field line at b, a CR or LF.
func (c *oldStreamCheck) endLine(b byte) {
	if b == '\r' {
		c.st = lnAfterCR
	} else {
		c.st = lnStart
	}
}

// startData begins a data line: a second one is joined to the first by a
// newline, which JSON reads as whitespace.
func (c *oldStreamCheck) startData() {
	if c.hasData {
		c.json.Write(newline)
		c.dataLen++
		c.appendHead(newline)
	}
	c.hasData = true
}

func (c *oldStreamCheck) appendHead(v []byte) {
	n := copy(c.head[c.headN:], v)
	c.headN += uint8(n)
}

func (c *oldStreamCheck) value(v []byte) {
	switch c.kind {
	case fData:
		c.json.Write(v)
		c.dataLen += len(v)
		c.appendHead(v)
	case fEvent:
		n := copy(c.name[c.nameN:], v)
		c.nameN += uint8(n)
	}
}

var (
	oldStopType     = [][]byte{[]byte(`"type":"message_stop"`), []byte(`"type": "message_stop"`)}
	oldErrorType    = [][]byte{[]byte(`"type":"error"`), []byte(`"type": "error"`)}
	oldOpenAIErrors = [][]byte{[]byte(`{"error":`), []byte(`{"error" :`), []byte(`{ "error":`)}
)

// dispatch judges the event a blank line just ended, and readies the
// next. It reports false for a malformed event.
func (c *oldStreamCheck) dispatch() bool {
	head, name := c.head[:c.headN], c.name[:c.nameN]
	ok := true
	if c.responses {
		if c.hasData && c.dataLen > 0 && !(c.dataLen == len(doneData) && bytes.Equal(head, doneData)) && !c.json.Done() {
			ok, c.bad = false, true
		} else {
			c.oldDispatchResponses(name, head)
		}
		c.begun, c.hasData, c.dataLen, c.headN, c.nameN = false, false, 0, 0, 0
		c.json.Reset()
		return ok
	}
	if c.hasData && c.dataLen > 0 {
		switch {
		case c.dataLen == len(doneData) && bytes.Equal(head, doneData):
			if c.dialect == OpenAI {
				c.terminated = true
			}
		case !c.json.Done():
			ok, c.bad = false, true
		case c.dialect == Anthropic:
			if oldContainsAny(head, oldStopType) {
				c.terminated = true
			}
			if oldContainsAny(head, oldErrorType) {
				c.upstreamErr = true
			}
		default:
			if oldContainsAny(head, oldOpenAIErrors) {
				c.upstreamErr = true
			}
		}
	}
	switch string(name) {
	case "message_stop":
		c.terminated = c.terminated || c.dialect == Anthropic
	case "error":
		c.upstreamErr = true
	}
	c.begun, c.hasData, c.dataLen, c.headN, c.nameN = false, false, 0, 0, 0
	c.json.Reset()
	return ok
}

func oldContainsAny(b []byte, subs [][]byte) bool {
	for _, s := range subs {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
}

// End judges the stream at its end: StreamOK, or why it failed. An event
// cut short by the end (no blank line after it) is judged as if it had
// one, so a terminator sent without its trailing blank line still ends
// the stream properly.
func (c *oldStreamCheck) End() string {
	if !c.bad && c.begun {
		c.dispatch()
	}
	switch {
	case c.bad:
		return StreamMalformed
	case c.upstreamErr:
		return StreamErrorEvent
	case !c.terminated:
		return StreamUnterminated
	}
	return StreamOK
}

// Terminated reports whether the terminator has been seen.
func (c *oldStreamCheck) Terminated() bool { return c.terminated }

// UpstreamError reports whether the provider sent an error event of its
// own, which a relay passes on instead of adding one.
func (c *oldStreamCheck) UpstreamError() bool { return c.upstreamErr }

var oldTypeKey = []byte(`"type":"`)

// oldResponsesType is an event's type: its event: name, or else the
// "type" its data opens with.
func oldResponsesType(name, data []byte) []byte {
	if len(name) > 0 {
		return name
	}
	i := bytes.Index(data, oldTypeKey)
	if i < 0 {
		return nil
	}
	rest := data[i+len(oldTypeKey):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return nil
}

// oldDispatchResponses judges a Responses API event by its type: one of
// the three final events terminates the stream, and an error event, or
// a response that failed, is the provider's error.
func (c *oldStreamCheck) oldDispatchResponses(name, head []byte) {
	switch string(oldResponsesType(name, head)) {
	case "response.completed", "response.incomplete":
		c.terminated = true
	case "response.failed":
		c.terminated, c.upstreamErr = true, true
	case "error":
		c.upstreamErr = true
	}
}

type oldStreamUsage struct {
	tail   [oldTailLen]byte
	tailN  int
	seam   [2 * oldTailLen]byte
	tokens int
	found  bool
	// provisional is the output count read inside a message_start.
	provisional int
	// input holds the last prompt/input_tokens, cache_creation and
	// cache_read counts read; haveInput says one was.
	input     [3]int
	haveInput bool
	// cached is the last OpenAI cached_tokens read (haveCached).
	cached     int
	haveCached bool
	// phase is where in an Anthropic message the scan is: which of
	// message_start or message_delta/message_stop it saw last.
	phase  uint8
	events int
	// reason is the last finish_reason or stop_reason seen.
	reason  [maxReason]byte
	reasonN int
}

// oldStreamUsage.phase values.
const (
	oldPhaseNone  = iota
	oldPhaseStart // inside message_start: its output count is provisional
	oldPhaseAfter // message_delta or message_stop seen: counts are final
)

// Which count a usage key carries.
const (
	oldFieldOutput = iota
	oldFieldInput
	oldFieldCacheWrite
	oldFieldCacheRead
	oldFieldCached // OpenAI's prompt_tokens_details.cached_tokens
)

var (
	// oldTokensKey ends every usage key the scan reads; oldTokenKeys are what
	// may stand before it, and the count each names.
	oldTokensKey = []byte(`tokens":`)
	oldTokenKeys = [...]struct {
		name  []byte
		field int
	}{
		{[]byte(`"completion_`), oldFieldOutput},
		{[]byte(`"output_`), oldFieldOutput},
		{[]byte(`"prompt_`), oldFieldInput},
		{[]byte(`"input_`), oldFieldInput},
		{[]byte(`"cache_creation_input_`), oldFieldCacheWrite},
		{[]byte(`"cache_read_input_`), oldFieldCacheRead},
		{[]byte(`"cached_`), oldFieldCached},
	}
	// oldMessageType begins an Anthropic message event's type.
	oldMessageType  = []byte(`"type":"message_`)
	oldReasonKeys   = [][]byte{[]byte(`"finish_reason":"`), []byte(`"stop_reason":"`)}
	oldContentDelta = []byte(`"content":"`)
	oldEmptyContent = []byte(`"content":""`)
	oldTextDelta    = []byte(`"type":"text_delta"`)
	// oldOutputDelta: a Responses API stream's text delta.
	oldOutputDelta = []byte(`"type":"response.output_text.delta"`)
)

// oldMaxUsageDigits: MaxUsage's digits; a longer number is no count.
const oldMaxUsageDigits = 8

// oldTailLen keeps enough of a chunk's end to find a key, or a finish
// reason and its key, split across chunks.
const oldTailLen = 48

// Write scans the next chunk.
func (u *oldStreamUsage) Write(p []byte) {
	u.events += bytes.Count(p, oldContentDelta) - bytes.Count(p, oldEmptyContent) + bytes.Count(p, oldTextDelta) + bytes.Count(p, oldOutputDelta)
	if u.tailN > 0 {
		// A key or a number split across the previous chunk and this one
		// is whole in the seam between them: only what begins in the
		// tail and ends past it is read there (the rest was, or will be).
		n := copy(u.seam[:], u.tail[:u.tailN])
		n += copy(u.seam[n:], p)
		u.scan(u.seam[:n], u.tailN)
		u.events += oldStraddling(u.seam[:n], u.tailN, oldContentDelta) - oldStraddling(u.seam[:n], u.tailN, oldEmptyContent) +
			oldStraddling(u.seam[:n], u.tailN, oldTextDelta) + oldStraddling(u.seam[:n], u.tailN, oldOutputDelta)
	}
	u.scan(p, 0)
	if len(p) >= oldTailLen {
		u.tailN = copy(u.tail[:], p[len(p)-oldTailLen:])
	} else {
		// Keep the last oldTailLen bytes of the previous tail plus p.
		keep := min(u.tailN, oldTailLen-len(p))
		copy(u.tail[:], u.tail[u.tailN-keep:u.tailN])
		u.tailN = keep + copy(u.tail[keep:], p)
	}
}

// oldStraddling counts the needles in buf that begin before split and end
// after it: split across two chunks, so neither chunk's count saw them.
func oldStraddling(buf []byte, split int, needle []byte) int {
	n := 0
	for i := max(0, split-len(needle)+1); i < split && i+len(needle) <= len(buf); i++ {
		if bytes.HasPrefix(buf[i:], needle) {
			n++
		}
	}
	return n
}

// scan reads buf's usage counts and message events in order. With
// split > 0 (the seam), only an item that begins before split and ends
// at or after it counts. A number that runs to the end of buf may
// continue in the next chunk, so it waits for the seam.
func (u *oldStreamUsage) scan(buf []byte, split int) {
	for at := 0; at < len(buf); {
		ki := bytes.Index(buf[at:], oldTokensKey)
		mi := bytes.Index(buf[at:], oldMessageType)
		if ki < 0 && mi < 0 {
			break
		}
		if mi >= 0 && (ki < 0 || mi < ki) {
			start := at + mi
			v := buf[start+len(oldMessageType):]
			phase, n := uint8(oldPhaseNone), 0
			switch {
			case bytes.HasPrefix(v, []byte(`start"`)):
				phase, n = oldPhaseStart, len(`start"`)
			case bytes.HasPrefix(v, []byte(`delta"`)):
				phase, n = oldPhaseAfter, len(`delta"`)
			case bytes.HasPrefix(v, []byte(`stop"`)):
				phase, n = oldPhaseAfter, len(`stop"`)
			}
			end := start + len(oldMessageType) + n
			if phase != oldPhaseNone && (split == 0 || start < split && end > split) {
				u.phase = phase
			}
			at = start + len(oldMessageType)
			continue
		}
		q := at + ki // where tokens": begins
		at = q + len(oldTokensKey)
		field, start := -1, 0
		for _, k := range oldTokenKeys {
			if s := q - len(k.name); s >= 0 && bytes.Equal(buf[s:q], k.name) {
				field, start = k.field, s
				break
			}
		}
		if field < 0 || split > 0 && start >= split {
			continue
		}
		j := at
		for j < len(buf) && buf[j] == ' ' {
			j++
		}
		n, k := 0, j
		for k < len(buf) && buf[k] >= '0' && buf[k] <= '9' {
			if k-j < oldMaxUsageDigits {
				n = n*10 + int(buf[k]-'0')
			}
			k++
		}
		if k == j || k >= len(buf) || k-j > oldMaxUsageDigits || split > 0 && k < split {
			continue
		}
		switch {
		case field == oldFieldCached:
			u.cached, u.haveCached = n, true
		case field != oldFieldOutput:
			u.input[field-oldFieldInput], u.haveInput = n, true
		case u.phase == oldPhaseStart:
			u.provisional = n
		default:
			u.tokens, u.found = n, true
		}
	}
	for _, key := range oldReasonKeys {
		i := bytes.LastIndex(buf, key)
		if i < 0 {
			continue
		}
		v := buf[i+len(key):]
		if end := bytes.IndexByte(v, '"'); end >= 0 && end <= maxReason {
			u.reasonN = copy(u.reason[:], v[:end])
		}
	}
}

// FinishReason is the last finish_reason (OpenAI) or stop_reason
// (Anthropic) the stream carried, "" if none.
func (u *oldStreamUsage) FinishReason() string { return string(u.reason[:u.reasonN]) }

// Tokens returns the output count, and whether it came from the
// provider's final usage rather than from counting deltas. A stream cut
// before its final usage is charged what it relayed: its deltas, or the
// provisional count if that is more.
func (u *oldStreamUsage) Tokens() (int, bool) {
	if u.found {
		return u.tokens, true
	}
	return max(0, u.events, u.provisional), false
}

// InputTokens returns the input count the provider reported, and
// whether it reported one: prompt_tokens, or input_tokens with
// Anthropic's cache_creation_input_tokens and cache_read_input_tokens
// added (its input_tokens leave them out; the prompt is all three).
func (u *oldStreamUsage) InputTokens() (int64, bool) {
	if !u.haveInput {
		return 0, false
	}
	return min(int64(u.input[0])+int64(u.input[1])+int64(u.input[2]), MaxUsage), true
}

// CachedTokens returns how many of InputTokens' count the provider
// served from its prompt cache: OpenAI's cached_tokens (inside
// prompt_tokens_details or input_tokens_details, and part of
// prompt_tokens), else Anthropic's cache_read_input_tokens. It is never
// more than InputTokens' count, and 0 when the stream reported no input.
func (u *oldStreamUsage) CachedTokens() int64 {
	total, ok := u.InputTokens()
	if !ok {
		return 0
	}
	c := int64(u.input[2])
	if u.haveCached {
		c = int64(u.cached)
	}
	return min(c, total)
}
