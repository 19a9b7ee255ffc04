package protocol

import (
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
