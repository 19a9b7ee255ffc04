package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/native"
)

type errorBody struct {
	Type  string    `json:"type"`
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// hubStatus is the hub's status and error type for a Google RPC status
// (Gemini's error.status), or for the HTTP status code when the status
// is unknown or absent.
func hubStatus(status string, code int) (int, string) {
	switch status {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return 400, "invalid_request_error"
	case "UNAUTHENTICATED":
		return 401, "authentication_error"
	case "PERMISSION_DENIED":
		return 403, "permission_error"
	case "NOT_FOUND":
		return 404, "not_found_error"
	case "RESOURCE_EXHAUSTED":
		return 429, "rate_limit_error"
	case "UNAVAILABLE":
		return 529, "overloaded_error"
	case "DEADLINE_EXCEEDED":
		return 504, "timeout_error"
	case "INTERNAL", "UNKNOWN", "DATA_LOSS":
		if code == 502 {
			return 502, "api_error"
		}
		return 500, "api_error"
	}
	return native.StatusType(code)
}

// readError reads Google's error body: {"error": {...}}, or a JSON array
// of one such object (as streamGenerateContent without alt=sse answers).
func readError(body []byte) *gmErrorInfo {
	var one struct {
		Error *gmErrorInfo `json:"error"`
	}
	b := bytes.TrimSpace(body)
	if len(b) > 0 && b[0] == '[' {
		var many []json.RawMessage
		if json.Unmarshal(b, &many) != nil || len(many) == 0 {
			return nil
		}
		b = many[0]
	}
	if json.Unmarshal(b, &one) != nil {
		return nil
	}
	return one.Error
}

// retryDelay reads a RetryInfo detail's retryDelay ("37s", "1.5s").
func retryDelay(details []json.RawMessage) time.Duration {
	for _, d := range details {
		var ri struct {
			Type       string `json:"@type"`
			RetryDelay string `json:"retryDelay"`
		}
		if json.Unmarshal(d, &ri) != nil || !strings.HasSuffix(ri.Type, "google.rpc.RetryInfo") {
			continue
		}
		if v, err := time.ParseDuration(ri.RetryDelay); err == nil && v > 0 {
			return v
		}
	}
	return 0
}

// Failure implements native.Codec: Google's error status decides the
// hub's status and type, and the message keeps Gemini's words. A 404
// about a model (or a 404 that is no API's error at all: a path Gemini
// does not serve) gets Anthropic's "model: " prefix, which
// protocol.UnknownModel reads as a wrong route.
func (Codec) Failure(status int, h http.Header, body []byte) native.Failure {
	info := readError(body)
	var f native.Failure
	var typ, msg string
	if info != nil {
		f.Status, typ = hubStatus(info.Status, status)
		if keyRefused(info.Details) {
			// The Gemini API answers a bad key 400 INVALID_ARGUMENT: it is
			// the provider's credential, not the client's request.
			f.Status, typ = 401, "authentication_error"
		}
		msg = info.Message
		f.RetryAfter = retryDelay(info.Details)
	} else {
		f.Status, typ = hubStatus("", status)
		if kept(status) {
			f.Status = status // not Google's error: the status is all there is
		}
	}
	if f.RetryAfter == 0 {
		f.RetryAfter = native.RetryAfter(h)
	}
	if msg == "" {
		msg = fmt.Sprintf("Gemini answered %d %s", status, http.StatusText(status))
	}
	if f.Status == 404 && !strings.HasPrefix(msg, "model:") && (info == nil || strings.Contains(strings.ToLower(msg), "model")) {
		msg = "model: " + msg
	}
	f.Body = native.HubError(typ, msg)
	return f
}

// kept lists the HTTP statuses a body that is not Google's error keeps.
func kept(status int) bool {
	switch status {
	case 400, 401, 403, 404, 408, 413, 429, 500, 502, 503, 504, 529:
		return true
	}
	return false
}

// keyRefused reports an ErrorInfo detail saying the API key is not valid
// or has expired.
func keyRefused(details []json.RawMessage) bool {
	for _, d := range details {
		var ei struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(d, &ei) == nil && strings.HasSuffix(ei.Type, "google.rpc.ErrorInfo") &&
			(ei.Reason == "API_KEY_INVALID" || ei.Reason == "API_KEY_EXPIRED") {
			return true
		}
	}
	return false
}
