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

// decodeAnswer is OutputTokens with encoding/json: the reference, and the
// path for every answer scanAnswer leaves to it.
func decodeAnswer(body []byte) (n int, found, valid bool, finish string) {
	var v struct {
		Usage struct {
			CompletionTokens *int `json:"completion_tokens"`
			OutputTokens     *int `json:"output_tokens"`
		} `json:"usage"`
		// The first choice's (an array keeps the rest out, unallocated).
		Choices [1]struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		var typeErr *json.UnmarshalTypeError
		return 0, false, errors.As(err, &typeErr), "" // well-formed, just not this shape
	}
	a := answerFields{finishReason: v.Choices[0].FinishReason, stopReason: v.StopReason}
	if v.Usage.CompletionTokens != nil {
		a.completionTokens, a.haveCompletion = *v.Usage.CompletionTokens, true
	}
	if v.Usage.OutputTokens != nil {
		a.outputTokens, a.haveOutput = *v.Usage.OutputTokens, true
	}
	return a.result()
}

// answerFields are the fields of a whole answer OutputTokens reads; the
// have flags say a count was there.
type answerFields struct {
	completionTokens, outputTokens int
	haveCompletion, haveOutput     bool
	finishReason, stopReason       string
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
// arrives, for the output token count: the last completion_tokens or
// output_tokens seen, or else the number of content deltas (OpenAI's
// non-empty "content", Anthropic's text_delta and the Responses API's
// response.output_text.delta), about one per token.
// It keeps only a short tail of the previous chunk, in fixed arrays, so
// it allocates nothing per chunk.
type StreamUsage struct {
	tail   [tailLen]byte
	tailN  int
	seam   [2 * tailLen]byte
	tokens int
	found  bool
	events int
	// reason is the last finish_reason or stop_reason seen.
	reason  [maxReason]byte
	reasonN int
}

var (
	usageKeys    = [][]byte{[]byte(`"completion_tokens":`), []byte(`"output_tokens":`)}
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
		// is whole in the seam between them.
		n := copy(u.seam[:], u.tail[:u.tailN])
		n += copy(u.seam[n:], p)
		u.scan(u.seam[:n])
	}
	u.scan(p)
	if len(p) >= tailLen {
		u.tailN = copy(u.tail[:], p[len(p)-tailLen:])
	} else {
		// Keep the last tailLen bytes of the previous tail plus p.
		keep := min(u.tailN, tailLen-len(p))
		copy(u.tail[:], u.tail[u.tailN-keep:u.tailN])
		u.tailN = keep + copy(u.tail[keep:], p)
	}
}

// scan records the last complete usage count in buf: a number that runs
// to the end of buf may continue in the next chunk, so it waits for the
// seam.
func (u *StreamUsage) scan(buf []byte) {
	for _, key := range usageKeys {
		i := bytes.LastIndex(buf, key)
		if i < 0 {
			continue
		}
		j := i + len(key)
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
		if k > j && k < len(buf) && k-j <= maxUsageDigits {
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

// Tokens returns the count, and whether it came from usage rather than
// from counting deltas.
func (u *StreamUsage) Tokens() (int, bool) {
	if u.found {
		return u.tokens, true
	}
	return max(0, u.events), false
}
