package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
)

// OutputTokens reads the output token count from a whole JSON answer's
// usage: completion_tokens (OpenAI) or output_tokens (Anthropic), and why
// it ended: the first choice's finish_reason (OpenAI) or stop_reason
// (Anthropic), "" if none. valid reports whether body is well-formed
// JSON at all (an object or not), so one pass both checks an answer and
// reads its usage.
func OutputTokens(body []byte) (n int, found, valid bool, finish string) {
	if a, ok := scanAnswer(body); ok {
		return a.result()
	}
	return decodeAnswer(body)
}

// Input is the input an answer's usage reported.
type Input struct {
	// Tokens is the whole prompt (InputOf's count); Found says the
	// answer reported one.
	Tokens int64
	Found  bool
	// Cached is the part of Tokens the provider served from its prompt
	// cache (CachedOf), never more than Tokens.
	Cached int64
}

// AnswerUsage is OutputTokens, InputOf and CachedOf in one pass over the
// answer.
func AnswerUsage(body []byte) (n int, found, valid bool, finish string, in Input) {
	if a, ok := scanAnswer(body); ok {
		n, found, valid, finish = a.result()
		return n, found, valid, finish, a.inputUsage()
	}
	n, found, valid, finish = decodeAnswer(body)
	if found {
		in = decodeFields(body).inputUsage()
	}
	return n, found, valid, finish, in
}

// CachedOf reads how many of a whole JSON answer's input tokens the
// provider served from its prompt cache: OpenAI's
// usage.prompt_tokens_details.cached_tokens (the Responses API's
// usage.input_tokens_details.cached_tokens), which prompt_tokens
// includes, or Anthropic's cache_read_input_tokens, which InputOf adds
// to input_tokens. It is never more than InputOf's count, and 0 when the
// answer reports no input.
func CachedOf(body []byte) int64 {
	a, ok := scanAnswer(body)
	if !ok {
		a = decodeFields(body)
	}
	return a.inputUsage().Cached
}

// InputOf reads the input token count of a whole JSON answer's usage,
// as StreamUsage.InputTokens does for a stream: prompt_tokens (OpenAI),
// or input_tokens with Anthropic's cache reads and writes added; found
// is false when the answer reports none (or a count out of range).
func InputOf(body []byte) (n int64, found bool) {
	a, ok := scanAnswer(body)
	if !ok {
		a = decodeFields(body)
	}
	return a.input()
}

// decodeAnswer is OutputTokens with encoding/json: the reference, and the
// path for every answer scanAnswer leaves to it.
func decodeAnswer(body []byte) (n int, found, valid bool, finish string) {
	var v answerJSON
	if err := json.Unmarshal(body, &v); err != nil {
		var typeErr *json.UnmarshalTypeError
		return 0, false, errors.As(err, &typeErr), "" // well-formed, just not this shape
	}
	return v.fields().result()
}

// answerJSON is the shape decodeAnswer reads.
type answerJSON struct {
	Usage struct {
		CompletionTokens *int `json:"completion_tokens"`
		OutputTokens     *int `json:"output_tokens"`
		// The input counts are read raw, so that one of another type
		// costs only itself and not the output count.
		PromptTokens json.RawMessage `json:"prompt_tokens"`
		InputTokens  json.RawMessage `json:"input_tokens"`
		CacheWrite   json.RawMessage `json:"cache_creation_input_tokens"`
		CacheRead    json.RawMessage `json:"cache_read_input_tokens"`
		// The details are read raw too, so that details of another
		// shape cost only the cached count.
		PromptDetails json.RawMessage `json:"prompt_tokens_details"`
		InputDetails  json.RawMessage `json:"input_tokens_details"`
	} `json:"usage"`
	// The first choice's (an array keeps the rest out, unallocated).
	Choices [1]struct {
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	StopReason string `json:"stop_reason"`
}

func (v *answerJSON) fields() answerFields {
	a := answerFields{finishReason: v.Choices[0].FinishReason, stopReason: v.StopReason}
	if v.Usage.CompletionTokens != nil {
		a.completionTokens, a.haveCompletion = *v.Usage.CompletionTokens, true
	}
	if v.Usage.OutputTokens != nil {
		a.outputTokens, a.haveOutput = *v.Usage.OutputTokens, true
	}
	for i, raw := range [4]json.RawMessage{v.Usage.PromptTokens, v.Usage.InputTokens, v.Usage.CacheWrite, v.Usage.CacheRead} {
		if raw != nil {
			a.inputs[i], a.haveInputs[i] = wholeNumber(raw)
		}
	}
	for i, raw := range [2]json.RawMessage{v.Usage.PromptDetails, v.Usage.InputDetails} {
		var d struct {
			Cached json.RawMessage `json:"cached_tokens"`
		}
		if raw != nil && json.Unmarshal(raw, &d) == nil && d.Cached != nil {
			a.cached[i], a.haveCached[i] = wholeNumber(d.Cached)
		}
	}
	return a
}

// decodeFields is decodeAnswer's fields, for InputOf: none for a body
// that is not an answer.
func decodeFields(body []byte) answerFields {
	var v answerJSON
	if json.Unmarshal(body, &v) != nil {
		return answerFields{}
	}
	return v.fields()
}

// answerFields are the fields of a whole answer OutputTokens reads; the
// have flags say a count was there.
type answerFields struct {
	completionTokens, outputTokens int
	haveCompletion, haveOutput     bool
	finishReason, stopReason       string
	// inputs are prompt_tokens, input_tokens, cache_creation_input_tokens
	// and cache_read_input_tokens, each when haveInputs says it was a
	// whole number.
	inputs     [4]int
	haveInputs [4]bool
	// cached are prompt_tokens_details.cached_tokens and
	// input_tokens_details.cached_tokens, each when haveCached says it
	// was a whole number.
	cached     [2]int
	haveCached [2]bool
}

// inputUsage is AnswerUsage's Input: input's count, and of it the
// cached part, OpenAI's details first, then Anthropic's cache reads.
func (a answerFields) inputUsage() Input {
	n, found := a.input()
	if !found {
		return Input{}
	}
	in := Input{Tokens: n, Found: true}
	switch {
	case a.haveCached[0] && a.cached[0] >= 0 && a.cached[0] <= MaxUsage:
		in.Cached = int64(a.cached[0])
	case a.haveCached[1] && a.cached[1] >= 0 && a.cached[1] <= MaxUsage:
		in.Cached = int64(a.cached[1])
	case !a.haveInputs[0] && a.haveInputs[3] && a.inputs[3] >= 0 && a.inputs[3] <= MaxUsage:
		in.Cached = int64(a.inputs[3])
	}
	in.Cached = min(in.Cached, n)
	return in
}

// input is InputOf's answer: prompt_tokens when the answer has it, else
// input_tokens plus the cache counts; counts out of [0, MaxUsage] are
// none.
func (a answerFields) input() (int64, bool) {
	ok := func(i int) bool { return a.haveInputs[i] && a.inputs[i] >= 0 && a.inputs[i] <= MaxUsage }
	if ok(0) {
		return int64(a.inputs[0]), true
	}
	if !ok(1) {
		return 0, false
	}
	n := int64(a.inputs[1])
	for _, i := range [2]int{2, 3} {
		if ok(i) {
			n += int64(a.inputs[i])
		}
	}
	return min(n, MaxUsage), true
}

// result is OutputTokens' answer for an answer that is well-formed JSON.
func (a answerFields) result() (n int, found, valid bool, finish string) {
	finish = a.stopReason
	if f := a.finishReason; f != "" {
		finish = f
	}
	if len(finish) > maxReason {
		finish = ""
	}
	switch {
	case a.haveCompletion && a.completionTokens >= 0 && a.completionTokens <= MaxUsage:
		return a.completionTokens, true, true, finish
	case a.haveOutput && a.outputTokens >= 0 && a.outputTokens <= MaxUsage:
		return a.outputTokens, true, true, finish
	}
	return 0, false, true, finish
}

// maxReason bounds a finish reason kept from a provider's answer: the
// real ones are a word ("stop", "tool_calls", "end_turn").
const maxReason = 24

// MaxUsage bounds a token count read from a provider's usage: a count
// beyond it (or below zero) is taken as no count at all, so that one
// broken or hostile answer cannot charge a key for centuries.
const MaxUsage = 99_999_999

// StreamUsage watches a relayed SSE stream, in whatever chunks it
// arrives, for its usage: the output token count (the last
// completion_tokens or output_tokens seen, or else the number of content
// deltas: OpenAI's non-empty "content", Anthropic's text_delta and the
// Responses API's response.output_text.delta, about one per token) and
// the input count the provider reported (prompt_tokens, or input_tokens
// with Anthropic's cache reads and writes added).
//
// Anthropic's message_start carries a usage whose output_tokens (1) is
// a placeholder: the final count comes in message_delta. A count read
// inside message_start is therefore provisional, and a stream cut before
// its message_delta is charged what was relayed (its deltas), not 1.
//
// It keeps only a short tail of the previous chunk, in fixed arrays, so
// it allocates nothing per chunk.
type StreamUsage struct {
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

// StreamUsage.phase values.
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
func (u *StreamUsage) Write(p []byte) {
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
func (u *StreamUsage) scan(buf []byte, split int) {
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
func (u *StreamUsage) FinishReason() string { return string(u.reason[:u.reasonN]) }

// Tokens returns the output count, and whether it came from the
// provider's final usage rather than from counting deltas. A stream cut
// before its final usage is charged what it relayed: its deltas, or the
// provisional count if that is more.
func (u *StreamUsage) Tokens() (int, bool) {
	if u.found {
		return u.tokens, true
	}
	return max(0, u.events, u.provisional), false
}

// InputTokens returns the input count the provider reported, and
// whether it reported one: prompt_tokens, or input_tokens with
// Anthropic's cache_creation_input_tokens and cache_read_input_tokens
// added (its input_tokens leave them out; the prompt is all three).
func (u *StreamUsage) InputTokens() (int64, bool) {
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
func (u *StreamUsage) CachedTokens() int64 {
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
