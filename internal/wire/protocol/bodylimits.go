package protocol

import (
	"errors"
	"fmt"
)

// Limits bound the shape of a request body beyond its size, so that
// the work done on a body before it is admitted (counting its tokens,
// translating it for another API) is bounded by what a request may
// reasonably hold rather than by how many tiny pieces fit in
// max_body_bytes: 8 MB of one-character messages is 280,000 messages.
// A zero field is no limit.
type Limits struct {
	// MaxMessages caps the length of the messages array (refused 413:
	// the request is too large, and fewer messages would pass).
	MaxMessages int
	// MaxDepth caps how deeply arrays and objects nest anywhere in the
	// body (refused 400: no request needs it, so the body is wrong).
	MaxDepth int
}

// Default limits: far above any conversation or JSON schema a client
// sends, far below what a body budget's worth of empty messages holds.
const (
	DefaultMaxMessages = 100_000
	DefaultMaxDepth    = 128
)

// ErrTooManyMessages and ErrTooDeep are the errors of a body past
// Limits; each wraps ErrMalformed, so a caller that does not tell them
// apart still refuses the body.
var (
	ErrTooManyMessages = fmt.Errorf("%w: too many messages", ErrMalformed)
	ErrTooDeep         = fmt.Errorf("%w: nested too deeply", ErrMalformed)
)

// LimitError is a body past Limits: Err is ErrTooManyMessages or
// ErrTooDeep, and Msg says what to fix.
type LimitError struct {
	Err error
	Msg string
}

func (e *LimitError) Error() string { return ErrMalformed.Error() + ": " + e.Msg }

func (e *LimitError) Unwrap() error { return e.Err }

// ParseBodyWithin is ParseBody, then lim's checks on the parsed body:
// linear in the body and allocation-free, on a body already known to be
// valid JSON.
func ParseBodyWithin(raw []byte, lim Limits) (*Body, error) {
	b, err := ParseBody(raw)
	if err != nil {
		return nil, err
	}
	if err := lim.check(b); err != nil {
		return nil, err
	}
	return b, nil
}

func (lim Limits) check(b *Body) error {
	if lim.MaxDepth > 0 {
		if d, over := nesting(b.raw, lim.MaxDepth); over {
			return &LimitError{Err: ErrTooDeep, Msg: fmt.Sprintf(
				"the body nests arrays and objects more than %d levels deep (at least %d); the gateway takes at most %d (server.max_json_depth): flatten the structure", lim.MaxDepth, d, lim.MaxDepth)}
		}
	}
	if lim.MaxMessages > 0 && b.messages.ok() {
		if n := elements(b.raw, b.messages); n > lim.MaxMessages {
			return &LimitError{Err: ErrTooManyMessages, Msg: fmt.Sprintf(
				"the request has %d messages; the gateway takes at most %d (server.max_messages): send fewer, for example by dropping or summarising older turns", n, lim.MaxMessages)}
		}
	}
	return nil
}

// IsLimit reports whether err is a body past Limits, and which.
func IsLimit(err error) (*LimitError, bool) {
	var le *LimitError
	if errors.As(err, &le) {
		return le, true
	}
	return nil, false
}

// nesting reports whether the valid JSON in raw nests deeper than limit,
// and the depth it reached (limit+1 at most: it stops there).
func nesting(raw []byte, limit int) (int, bool) {
	depth, deepest := 0, 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			i = StringEnd(raw, i)
		case '{', '[':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest, true
				}
			}
		case '}', ']':
			depth--
		}
	}
	return deepest, false
}

// elements counts the elements of the array at s, in valid JSON; 0 when
// the value is not an array.
func elements(raw []byte, s span) int {
	i := SkipSpace(raw, s.start)
	if i >= s.end || raw[i] != '[' {
		return 0
	}
	n := 0
	for i = SkipSpace(raw, i+1); i < s.end && raw[i] != ']'; {
		i = SkipSpace(raw, SkipValue(raw, i))
		n++
		if i < s.end && raw[i] == ',' {
			i = SkipSpace(raw, i+1)
		}
	}
	return n
}
