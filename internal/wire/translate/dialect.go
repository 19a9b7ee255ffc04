package translate

import "github.com/sluice-gw/sluice/internal/wire/protocol"

// The same four translations, chosen by dialect, for a host that holds
// the client's dialect and the provider's as values. from is the dialect
// the input is in; to is the one wanted. When they are equal nothing
// needs translating: Request returns the body as it is, Response and
// ErrorBody likewise, and NewStream returns nil.

// Request translates a request body from the client's dialect to the
// provider's.
func Request(from, to protocol.Dialect, body []byte, opts Options) (*Translated, error) {
	switch {
	case from == to:
		return &Translated{Body: body}, nil
	case to == protocol.Anthropic:
		return RequestToAnthropic(body, opts)
	}
	return RequestToOpenAI(body, opts)
}

// Response translates a whole 2xx answer from the provider's dialect to
// the client's. created stamps an OpenAI answer (Unix seconds).
func Response(from, to protocol.Dialect, body []byte, created int64) ([]byte, error) {
	switch {
	case from == to:
		return body, nil
	case to == protocol.OpenAI:
		return ResponseToOpenAI(body, created)
	}
	return ResponseToAnthropic(body)
}

// ErrorBody translates an error answer (status and body) from the provider's
// dialect to the client's.
func ErrorBody(from, to protocol.Dialect, status int, body []byte) (int, []byte) {
	switch {
	case from == to:
		return status, body
	case to == protocol.OpenAI:
		return ErrorToOpenAI(status, body)
	}
	return ErrorToAnthropic(status, body)
}

// NewStream returns a translator for a streamed answer from the
// provider's dialect to the client's, or nil when they are the same.
func NewStream(from, to protocol.Dialect, cfg StreamConfig) Stream {
	switch {
	case from == to:
		return nil
	case to == protocol.OpenAI:
		return NewStreamToOpenAI(cfg)
	}
	return NewStreamToAnthropic()
}
