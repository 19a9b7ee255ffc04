package protocol

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Dialect is an API family: how requests are routed and errors are shaped.
type Dialect uint8

const (
	OpenAI Dialect = iota
	Anthropic
)

func (d Dialect) String() string {
	if d == Anthropic {
		return "anthropic"
	}
	return "openai"
}

// ParseDialect maps a provider kind from config to its Dialect; Azure
// OpenAI ("azure") speaks OpenAI's.
func ParseDialect(kind string) (Dialect, bool) {
	switch kind {
	case "openai", "azure":
		return OpenAI, true
	case "anthropic":
		return Anthropic, true
	}
	return 0, false
}

// Endpoint is one inference route the gateway proxies.
type Endpoint struct {
	Name    string // metric label: "chat_completions", "messages", ...
	Path    string // client path, e.g. /v1/chat/completions
	Dialect Dialect
	// Streams reports whether the endpoint can answer with SSE.
	Streams bool
}

// Endpoints lists every proxied POST route.
var Endpoints = []Endpoint{
	{Name: "chat_completions", Path: "/v1/chat/completions", Dialect: OpenAI, Streams: true},
	{Name: "completions", Path: "/v1/completions", Dialect: OpenAI, Streams: true},
	{Name: "embeddings", Path: "/v1/embeddings", Dialect: OpenAI},
	{Name: "messages", Path: "/v1/messages", Dialect: Anthropic, Streams: true},
	Responses,
}

// UpstreamPath is the path to append to a provider's base URL, which
// already carries the version prefix (…/v1).
func (e Endpoint) UpstreamPath() string { return strings.TrimPrefix(e.Path, "/v1") }

// Kind is an error category; each dialect spells it its own way.
type Kind uint8

const (
	InvalidRequest   Kind = iota // 400
	NotFound                     // 404
	TooLarge                     // 413
	RateLimited                  // 429: this caller is over its quota
	Overloaded                   // 503 / 529: the gateway is at capacity
	Timeout                      // 504
	Upstream                     // 502: every upstream failed
	Internal                     // 500
	RequestTimeout               // 408: the client was too slow sending its request
	MethodNotAllowed             // 405
	HeadersTooLarge              // 431: too many header fields
	Unauthorized                 // 401: no key, or a key the gateway does not know
	Forbidden                    // 403: the key may not use this model
	Conflict                     // 409: the request's Idempotency-Key is in use by a request still in progress
	Unprocessable                // 422: the Idempotency-Key was used for a different request
	SpendLimited                 // 429: this caller's spend limit in dollars is reached
)

// Status is the HTTP status for an error of kind k in dialect d. Only
// Overloaded differs: Anthropic's clients expect 529 for it.
func (d Dialect) Status(k Kind) int {
	switch k {
	case InvalidRequest:
		return http.StatusBadRequest
	case NotFound:
		return http.StatusNotFound
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case RateLimited, SpendLimited:
		return http.StatusTooManyRequests
	case Overloaded:
		if d == Anthropic {
			return 529
		}
		return http.StatusServiceUnavailable
	case Timeout:
		return http.StatusGatewayTimeout
	case Upstream:
		return http.StatusBadGateway
	case RequestTimeout:
		return http.StatusRequestTimeout
	case MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case HeadersTooLarge:
		return http.StatusRequestHeaderFieldsTooLarge
	case Unauthorized:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	case Conflict:
		return http.StatusConflict
	case Unprocessable:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

func (k Kind) typeName(d Dialect) string {
	switch k {
	case InvalidRequest, MethodNotAllowed, HeadersTooLarge, RequestTimeout, Conflict, Unprocessable:
		return "invalid_request_error"
	case NotFound:
		if d == Anthropic {
			return "not_found_error"
		}
		return "invalid_request_error"
	case TooLarge:
		if d == Anthropic {
			return "request_too_large"
		}
		return "invalid_request_error"
	case RateLimited:
		if d == Anthropic {
			return "rate_limit_error"
		}
		return "rate_limit_exceeded"
	case SpendLimited:
		if d == Anthropic {
			return "rate_limit_error"
		}
		return "insufficient_quota" // OpenAI's own type for an exhausted quota
	case Overloaded:
		return "overloaded_error"
	case Unauthorized:
		if d == Anthropic {
			return "authentication_error"
		}
		return "invalid_request_error"
	case Forbidden:
		if d == Anthropic {
			return "permission_error"
		}
		return "invalid_request_error"
	case Timeout:
		return "timeout_error"
	case Upstream:
		if d == Anthropic {
			return "api_error"
		}
		return "upstream_error"
	}
	if d == Anthropic {
		return "api_error"
	}
	return "server_error"
}

// ErrorBody renders an error in the dialect's own JSON shape.
func (d Dialect) ErrorBody(k Kind, msg string) []byte { return d.ErrorBodyParam(k, msg, "") }

// ErrorBodyParam is ErrorBody for an error a request parameter caused:
// OpenAI's shape names it in "param" (null when param is empty), as
// OpenAI's own API does and its SDKs expose; Anthropic's has no such
// field, and the message must name it.
func (d Dialect) ErrorBodyParam(k Kind, msg, param string) []byte {
	var v any
	if d == Anthropic {
		v = map[string]any{"type": "error", "error": map[string]string{"type": k.typeName(d), "message": msg}}
	} else {
		var p any
		if param != "" {
			p = param
		}
		var code any
		if k == SpendLimited {
			code = "spend_limit_exceeded"
		}
		v = map[string]any{"error": map[string]any{"message": msg, "type": k.typeName(d), "param": p, "code": code}}
	}
	b, _ := json.Marshal(v) // maps of strings always marshal
	return b
}

// StreamErrorEvent renders an error as one SSE event, for a stream that
// breaks after its headers went out and can no longer change its status.
func (d Dialect) StreamErrorEvent(k Kind, msg string) []byte {
	body := d.ErrorBody(k, msg)
	if d == Anthropic {
		return append(append([]byte("event: error\ndata: "), body...), "\n\n"...)
	}
	return append(append([]byte("data: "), body...), "\n\n"...)
}

// WriteError answers with status Status(k), the dialect's error body and,
// when retryAfter is positive, Retry-After in whole seconds (rounded up)
// and retry-after-ms, which both vendors' SDKs read.
func (d Dialect) WriteError(w http.ResponseWriter, k Kind, msg string, retryAfter time.Duration) {
	d.WriteErrorParam(w, k, msg, "", retryAfter)
}

// WriteErrorParam is WriteError for an error parameter param caused
// (ErrorBodyParam).
func (d Dialect) WriteErrorParam(w http.ResponseWriter, k Kind, msg, param string, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if retryAfter > 0 {
		secs := int64((retryAfter + time.Second - 1) / time.Second)
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
		h.Set("Retry-After-Ms", strconv.FormatInt(int64((retryAfter+time.Millisecond-1)/time.Millisecond), 10)) // never early
	}
	body := d.ErrorBodyParam(k, msg, param)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(d.Status(k))
	w.Write(body)
}
