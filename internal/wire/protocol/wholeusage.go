package protocol

import "bytes"

// wholeUsage reads the usage of a whole JSON answer (not a stream) that
// is too large to hold, as it is relayed in chunks (relayLarge): the
// last completion_tokens or output_tokens, the input counts, the last
// finish_reason or stop_reason. It matches keys as bytes, keeping a
// short tail of the previous chunk, so it allocates nothing; a whole
// answer's usage is its own, never a model's text, as the key's quotes
// cannot appear unescaped inside a string. It is StreamUsage's reader for
// a body that opens with '{' or '['; a stream is read by its events.
type wholeUsage struct {
	tail   [tailLen]byte
	tailN  int
	seam   [2 * tailLen]byte
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

// wholeUsage.phase values.
const (
	phaseNone  = iota
	phaseStart // inside message_start: its output count is provisional
	phaseAfter // message_delta or message_stop seen: counts are final
)

// Which count a usage key carries.
const (
	fieldOutput = iota
	fieldInput
	fieldCacheWrite
	fieldCacheRead
	fieldCached // OpenAI's prompt_tokens_details.cached_tokens
)

var (
	// tokensKey ends every usage key the scan reads; tokenKeys are what
	// may stand before it, and the count each names.
	tokensKey = []byte(`tokens":`)
	tokenKeys = [...]struct {
		name  []byte
		field int
	}{
		{[]byte(`"completion_`), fieldOutput},
		{[]byte(`"output_`), fieldOutput},
		{[]byte(`"prompt_`), fieldInput},
		{[]byte(`"input_`), fieldInput},
		{[]byte(`"cache_creation_input_`), fieldCacheWrite},
		{[]byte(`"cache_read_input_`), fieldCacheRead},
		{[]byte(`"cached_`), fieldCached},
	}
	// messageType begins an Anthropic message event's type.
	messageType  = []byte(`"type":"message_`)
	reasonKeys   = [][]byte{[]byte(`"finish_reason":"`), []byte(`"stop_reason":"`)}
	contentDelta = []byte(`"content":"`)
	emptyContent = []byte(`"content":""`)
	textDelta    = []byte(`"type":"text_delta"`)
	// outputDelta: a Responses API stream's text delta.
	outputDelta = []byte(`"type":"response.output_text.delta"`)
)

// maxUsageDigits: MaxUsage's digits; a longer number is no count.
const maxUsageDigits = 8

// tailLen keeps enough of a chunk's end to find a key, or a finish
// reason and its key, split across chunks.
const tailLen = 48

// Write scans the next chunk.
func (u *wholeUsage) Write(p []byte) {
	u.events += bytes.Count(p, contentDelta) - bytes.Count(p, emptyContent) + bytes.Count(p, textDelta) + bytes.Count(p, outputDelta)
	if u.tailN > 0 {
		// A key or a number split across the previous chunk and this one
		// is whole in the seam between them: only what begins in the
		// tail and ends past it is read there (the rest was, or will be).
		n := copy(u.seam[:], u.tail[:u.tailN])
		n += copy(u.seam[n:], p)
		u.scan(u.seam[:n], u.tailN)
		u.events += straddling(u.seam[:n], u.tailN, contentDelta) - straddling(u.seam[:n], u.tailN, emptyContent) +
			straddling(u.seam[:n], u.tailN, textDelta) + straddling(u.seam[:n], u.tailN, outputDelta)
	}
	u.scan(p, 0)
	if len(p) >= tailLen {
		u.tailN = copy(u.tail[:], p[len(p)-tailLen:])
	} else {
		// Keep the last tailLen bytes of the previous tail plus p.
		keep := min(u.tailN, tailLen-len(p))
		copy(u.tail[:], u.tail[u.tailN-keep:u.tailN])
		u.tailN = keep + copy(u.tail[keep:], p)
	}
}

// straddling counts the needles in buf that begin before split and end
// after it: split across two chunks, so neither chunk's count saw them.
func straddling(buf []byte, split int, needle []byte) int {
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
func (u *wholeUsage) scan(buf []byte, split int) {
	for at := 0; at < len(buf); {
		ki := bytes.Index(buf[at:], tokensKey)
		mi := bytes.Index(buf[at:], messageType)
		if ki < 0 && mi < 0 {
			break
		}
		if mi >= 0 && (ki < 0 || mi < ki) {
			start := at + mi
			v := buf[start+len(messageType):]
			phase, n := uint8(phaseNone), 0
			switch {
			case bytes.HasPrefix(v, []byte(`start"`)):
				phase, n = phaseStart, len(`start"`)
			case bytes.HasPrefix(v, []byte(`delta"`)):
				phase, n = phaseAfter, len(`delta"`)
			case bytes.HasPrefix(v, []byte(`stop"`)):
				phase, n = phaseAfter, len(`stop"`)
			}
			end := start + len(messageType) + n
			if phase != phaseNone && (split == 0 || start < split && end > split) {
				u.phase = phase
			}
			at = start + len(messageType)
			continue
		}
		q := at + ki // where tokens": begins
		at = q + len(tokensKey)
		field, start := -1, 0
		for _, k := range tokenKeys {
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
			if k-j < maxUsageDigits {
				n = n*10 + int(buf[k]-'0')
			}
			k++
		}
		if k == j || k >= len(buf) || k-j > maxUsageDigits || split > 0 && k < split {
			continue
		}
		switch {
		case field == fieldCached:
			u.cached, u.haveCached = n, true
		case field != fieldOutput:
			u.input[field-fieldInput], u.haveInput = n, true
		case u.phase == phaseStart:
			u.provisional = n
		default:
			u.tokens, u.found = n, true
		}
	}
	for _, key := range reasonKeys {
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
func (u *wholeUsage) FinishReason() string { return string(u.reason[:u.reasonN]) }

// Tokens returns the output count, and whether it came from the
// provider's final usage rather than from counting deltas. A stream cut
// before its final usage is charged what it relayed: its deltas, or the
// provisional count if that is more.
func (u *wholeUsage) Tokens() (int, bool) {
	if u.found {
		return u.tokens, true
	}
	return max(0, u.events, u.provisional), false
}

// InputTokens returns the input count the provider reported, and
// whether it reported one: prompt_tokens, or input_tokens with
// Anthropic's cache_creation_input_tokens and cache_read_input_tokens
// added (its input_tokens leave them out; the prompt is all three).
func (u *wholeUsage) InputTokens() (int64, bool) {
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
func (u *wholeUsage) CachedTokens() int64 {
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
