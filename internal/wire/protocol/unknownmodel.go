package protocol

import (
	"encoding/json"
	"strings"
)

// UnknownModel reports whether a provider's 404 (status and body, in the
// provider's dialect d) says that the model the call named, or the path
// it was sent to, does not exist there: the gateway's route is wrong, so
// every request sent that way fails, and the provider's breaker should
// hear it. Any other 404 is about something the request's body names (a
// stored response's previous_response_id, a file id, a vector store, a
// tool's resource) and is the client's own: it must not count against
// the provider, or one client's bad ids would move everyone's traffic.
//
// A 404 says the model or the path is unknown when:
//
//   - its body is not a JSON error at all: a web server's "not found"
//     page for a path the provider does not serve (a base_url that is
//     wrong);
//   - OpenAI (and Azure): error.code is "model_not_found" or
//     "DeploymentNotFound";
//   - vLLM and SGLang: the message (top level or error.message) begins
//     "The model `" and says it does not exist;
//   - Anthropic: a not_found_error whose message begins "model:".
//
// A body over MaxErrorBody is not read, and is not one.
func UnknownModel(d Dialect, status int, body []byte) bool {
	if status != 404 || len(body) > MaxErrorBody {
		return false
	}
	var e struct {
		Message string `json:"message"`
		Error   *struct {
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || (e.Error == nil && e.Message == "") {
		return true // not an API's error: the path is not served
	}
	msg := e.Message
	if e.Error != nil {
		if c, _ := e.Error.Code.(string); c == "model_not_found" || c == "DeploymentNotFound" {
			return true
		}
		if d == Anthropic && e.Error.Type == "not_found_error" && strings.HasPrefix(strings.TrimSpace(e.Error.Message), "model:") {
			return true
		}
		if e.Error.Message != "" {
			msg = e.Error.Message
		}
	}
	msg = strings.ToLower(strings.TrimSpace(msg))
	return strings.HasPrefix(msg, "the model `") && (strings.Contains(msg, "does not exist") || strings.Contains(msg, "not found"))
}
