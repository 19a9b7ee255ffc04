package translate

import (
	"encoding/json"
	"net/http"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

type anErrorInfo struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type oaErrorInfo struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// ErrorToOpenAI translates an Anthropic error answer into OpenAI's shape:
// the status stays, but for 529 (overloaded), which OpenAI's clients know
// as 503; the message stays; the type follows the error's kind, as
// protocol.Dialect.ErrorBody spells it. A body not in Anthropic's shape
// gets a message from the status alone: its bytes are not passed on.
// Scrub secrets from the message before or after, as for any provider
// bytes.
func ErrorToOpenAI(status int, body []byte) (int, []byte) {
	var in struct {
		Error *anErrorInfo `json:"error"`
	}
	msg, typ := "", ""
	if json.Unmarshal(body, &in) == nil && in.Error != nil {
		msg, typ = in.Error.Message, in.Error.Type
	}
	k := kindOf(status, typ)
	if status == 529 {
		status = http.StatusServiceUnavailable
	}
	return status, protocol.OpenAI.ErrorBody(k, messageOr(msg, status))
}

// ErrorToAnthropic translates an OpenAI error answer into Anthropic's
// shape, as ErrorToOpenAI does the other way: 503 becomes 529, which
// Anthropic's clients read as overloaded and retry.
func ErrorToAnthropic(status int, body []byte) (int, []byte) {
	var in struct {
		Error *oaErrorInfo `json:"error"`
	}
	msg, typ := "", ""
	if json.Unmarshal(body, &in) == nil && in.Error != nil {
		msg, typ = in.Error.Message, in.Error.Type
		if typ == "" {
			typ = codeString(in.Error.Code)
		}
	}
	k := kindOf(status, typ)
	if status == http.StatusServiceUnavailable {
		status = 529
	}
	return status, protocol.Anthropic.ErrorBody(k, messageOr(msg, status))
}

func codeString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func messageOr(msg string, status int) string {
	if msg != "" {
		return msg
	}
	if t := http.StatusText(status); t != "" {
		return "upstream error: " + t
	}
	return "upstream error"
}

// kindOf reads an error's kind from its status, or, for an error event
// in a stream (status 0) or a status that says little (500), from its
// type as either dialect spells it.
func kindOf(status int, typ string) protocol.Kind {
	switch status {
	case http.StatusBadRequest:
		return protocol.InvalidRequest
	case http.StatusUnauthorized:
		return protocol.Unauthorized
	case http.StatusForbidden:
		return protocol.Forbidden
	case http.StatusNotFound:
		return protocol.NotFound
	case http.StatusRequestTimeout:
		return protocol.RequestTimeout
	case http.StatusConflict:
		return protocol.Conflict
	case http.StatusRequestEntityTooLarge:
		return protocol.TooLarge
	case http.StatusUnprocessableEntity:
		return protocol.Unprocessable
	case http.StatusTooManyRequests:
		return protocol.RateLimited
	case http.StatusServiceUnavailable, 529:
		return protocol.Overloaded
	case http.StatusGatewayTimeout:
		return protocol.Timeout
	case http.StatusBadGateway:
		return protocol.Upstream
	}
	switch typ {
	case "invalid_request_error":
		return protocol.InvalidRequest
	case "authentication_error", "invalid_api_key":
		return protocol.Unauthorized
	case "permission_error", "billing_error":
		return protocol.Forbidden
	case "not_found_error", "model_not_found":
		return protocol.NotFound
	case "request_too_large":
		return protocol.TooLarge
	case "rate_limit_error", "rate_limit_exceeded", "insufficient_quota", "requests", "tokens":
		return protocol.RateLimited
	case "overloaded_error":
		return protocol.Overloaded
	case "timeout_error":
		return protocol.Timeout
	case "upstream_error":
		return protocol.Upstream
	}
	if status >= 400 && status < 500 {
		return protocol.InvalidRequest
	}
	return protocol.Internal
}

// streamErrorToOpenAI renders an Anthropic error event's data as OpenAI's
// in-stream error.
func streamErrorToOpenAI(data []byte) Event {
	var in struct {
		Error *anErrorInfo `json:"error"`
	}
	msg, typ := "", ""
	if json.Unmarshal(data, &in) == nil && in.Error != nil {
		msg, typ = in.Error.Message, in.Error.Type
	}
	return Event{Data: protocol.OpenAI.ErrorBody(kindOf(0, typ), messageOr(msg, 0))}
}

// streamErrorToAnthropic renders an OpenAI in-stream error as Anthropic's
// error event.
func streamErrorToAnthropic(data []byte) Event {
	var in struct {
		Error *oaErrorInfo `json:"error"`
	}
	msg, typ := "", ""
	if json.Unmarshal(data, &in) == nil && in.Error != nil {
		msg, typ = in.Error.Message, in.Error.Type
		if typ == "" {
			typ = codeString(in.Error.Code)
		}
	}
	return Event{Name: "error", Data: protocol.Anthropic.ErrorBody(kindOf(0, typ), messageOr(msg, 0))}
}
