package native

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HubError is the hub's error body: {"type":"error","error":{"type":typ,
// "message":msg}}.
func HubError(typ, msg string) []byte {
	b, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}{Type: "error", Error: struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{typ, msg}})
	return b
}

// StatusType is the hub's status and error type for a vendor's HTTP
// status, when the vendor's own error code does not say more: one rule
// for every codec, so a 503 from Gemini and from Bedrock is the same
// outcome to the gateway.
func StatusType(status int) (int, string) {
	switch {
	case status == 400, status == 409, status == 422:
		return 400, "invalid_request_error"
	case status == 401:
		return 401, "authentication_error"
	case status == 403:
		return 403, "permission_error"
	case status == 404:
		return 404, "not_found_error"
	case status == 408:
		return 408, "timeout_error"
	case status == 413:
		return 413, "request_too_large"
	case status == 429:
		return 429, "rate_limit_error"
	case status == 503, status == 529:
		return 529, "overloaded_error"
	case status == 504:
		return 504, "timeout_error"
	case status == 424, status == 502:
		return 502, "api_error"
	case status >= 400 && status < 500:
		return 400, "invalid_request_error"
	}
	return 500, "api_error"
}

// RetryAfter reads a vendor's Retry-After header in seconds (fractions
// allowed). The HTTP-date form needs a clock, which a codec has not: it
// is ignored, as is anything past a day.
func RetryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s <= 0 || s > 86400 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
