package bedrock

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluice-gw/sluice/internal/wire/native"
)

// ErrorType reads a Bedrock error's type: the X-Amzn-ErrorType header's
// part before ':' ("ThrottlingException:http://internal.amazon.com/…"),
// else the body's __type or code (after any '#').
func ErrorType(h http.Header, body []byte) string {
	if t := h.Get("X-Amzn-ErrorType"); t != "" {
		t, _, _ = strings.Cut(t, ":")
		return strings.TrimSpace(t)
	}
	var v struct {
		Type string `json:"__type"`
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &v)
	t := v.Type
	if t == "" {
		t = v.Code
	}
	if i := strings.LastIndexByte(t, '#'); i >= 0 {
		t = t[i+1:]
	}
	t, _, _ = strings.Cut(t, ":")
	return t
}

// maxMessage bounds the vendor words a hub error keeps.
const maxMessage = 2048

// errorMessage reads a Bedrock error body's message ("message" or
// "Message"); a body that is not JSON is kept as text, cut short.
func errorMessage(status int, body []byte) string {
	var v struct {
		Message  string `json:"message"`
		Message2 string `json:"Message"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil {
		msg = v.Message
		if msg == "" {
			msg = v.Message2
		}
	} else if utf8.Valid(body) {
		msg = strings.TrimSpace(string(body))
	}
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	if msg == "" {
		msg = "Bedrock answered " + strconv.Itoa(status) + " " + http.StatusText(status)
	}
	return msg
}

// hubStatus maps a Bedrock error (its type, else its status) to the
// hub's status and error type.
func hubStatus(typ string, status int) (int, string) {
	switch typ {
	case "ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException":
		return 429, "rate_limit_error"
	case "ModelNotReadyException":
		// AWS answers 429, but the model is loading, not the caller
		// throttled: 529 overloaded, so the gateway fails over and the
		// provider's capacity signal, not the client's rate, backs off.
		return 529, "overloaded_error"
	case "ServiceUnavailableException":
		return 503, "overloaded_error"
	case "ModelTimeoutException":
		return 408, "timeout_error"
	case "ValidationException", "SerializationException":
		if status == 413 {
			return 413, "request_too_large"
		}
		return 400, "invalid_request_error"
	case "AccessDeniedException":
		return 403, "permission_error"
	case "UnrecognizedClientException", "ExpiredTokenException", "InvalidSignatureException",
		"IncompleteSignatureException", "MissingAuthenticationTokenException":
		return 401, "authentication_error"
	case "ResourceNotFoundException":
		return 404, "not_found_error"
	case "ModelErrorException":
		return 502, "api_error"
	case "InternalServerException", "InternalFailure":
		return 500, "api_error"
	}
	return native.StatusType(status)
}

// Failure turns a Bedrock error answer into the hub's.
func (codec) Failure(status int, h http.Header, body []byte) native.Failure {
	typ := ErrorType(h, body)
	st, hubType := hubStatus(typ, status)
	msg := errorMessage(status, body)
	if typ != "" {
		msg = typ + ": " + msg
	}
	if st == 404 {
		// Converse's path names the model, and a 404 is about it:
		// worded so that protocol.UnknownModel recognises it.
		msg = "model: " + msg
	}
	return native.Failure{Status: st, Body: native.HubError(hubType, msg), RetryAfter: native.RetryAfter(h)}
}

// bedrockError maps the hub's error type (else its status) to Bedrock's
// exception and status, as AWS answers them.
func bedrockError(typ string, status int) (string, int) {
	switch typ {
	case "rate_limit_error":
		return "ThrottlingException", 429
	case "overloaded_error":
		return "ServiceUnavailableException", 503
	case "invalid_request_error":
		return "ValidationException", 400
	case "request_too_large":
		return "ValidationException", 413
	case "authentication_error":
		return "UnrecognizedClientException", 403
	case "permission_error", "billing_error":
		return "AccessDeniedException", 403
	case "not_found_error":
		return "ResourceNotFoundException", 404
	case "timeout_error":
		return "ModelTimeoutException", 408
	}
	switch {
	case status == 429:
		return "ThrottlingException", 429
	case status == 503 || status == 529:
		return "ServiceUnavailableException", 503
	case status == 401:
		return "UnrecognizedClientException", 403
	case status == 403:
		return "AccessDeniedException", 403
	case status == 404:
		return "ResourceNotFoundException", 404
	case status == 408 || status == 504:
		return "ModelTimeoutException", 408
	case status == 502:
		return "ModelErrorException", 424
	case status >= 400 && status < 500:
		return "ValidationException", 400
	}
	return "InternalServerException", 500
}

// readHubError reads the hub's error body: type and message.
func readHubError(body []byte) (typ, msg string) {
	var v struct {
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && v.Error != nil {
		return v.Error.Type, v.Error.Message
	}
	return "", ""
}

// Failure turns the hub's error answer into Bedrock's: status, the
// X-Amzn-ErrorType header, {"message"}; a Retry-After is kept.
func (server) Failure(status int, h http.Header, hub []byte) (int, http.Header, []byte) {
	typ, msg := readHubError(hub)
	exc, st := bedrockError(typ, status)
	if msg == "" {
		msg = http.StatusText(status)
	}
	out := http.Header{}
	out.Set("X-Amzn-ErrorType", exc+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	out.Set("Content-Type", "application/json")
	if ra := h.Get("Retry-After"); ra != "" {
		out.Set("Retry-After", ra)
	}
	body, _ := json.Marshal(map[string]string{"message": msg})
	return st, out, body
}
