package protocol

import (
	"encoding/json"
	"strings"
)

// MaxErrorBody bounds what ContextExceeded reads of an error body: a
// provider's error is a few hundred bytes, and a larger one is not an
// error this package knows.
const MaxErrorBody = 64 << 10

// ContextExceeded reports whether a provider's error answer (status and
// body, in the provider's dialect d) says the request's prompt is too
// long for the model's context window:
//
//   - OpenAI (and vLLM, SGLang, Azure): a 400 whose error.code is
//     "context_length_exceeded", or whose message speaks of the model's
//     maximum context length (servers that set no code);
//   - Anthropic: a 400 invalid_request_error whose message says the
//     prompt is too long, or that input and max_tokens exceed the
//     context limit.
//
// A body over MaxErrorBody, or not JSON, is not one.
func ContextExceeded(d Dialect, status int, body []byte) bool {
	if status != 400 || len(body) > MaxErrorBody {
		return false
	}
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	msg := strings.ToLower(e.Error.Message)
	if d == Anthropic {
		return e.Error.Type == "invalid_request_error" &&
			(strings.Contains(msg, "prompt is too long") || strings.Contains(msg, "exceed context limit"))
	}
	if c, _ := e.Error.Code.(string); c == "context_length_exceeded" {
		return true
	}
	return strings.Contains(msg, "maximum context length") || strings.Contains(msg, "context_length_exceeded")
}
