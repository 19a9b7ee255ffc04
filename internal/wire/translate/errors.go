package translate

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Sentinels. Every error this package returns wraps exactly one of them,
// so the gateway maps them to statuses in one place.
var (
	// ErrUntranslatable: the request asks for something the target dialect
	// cannot do. The client should hear 400 naming Error.Param; the
	// operator may list the parameter in Options.Drop instead.
	ErrUntranslatable = errors.New("translate: untranslatable parameter")
	// ErrInvalid: the request is not a well-formed request of its own
	// dialect (wrong JSON type, an unknown role, tool arguments that are
	// not JSON). 400; Options.Drop does not apply.
	ErrInvalid = errors.New("translate: invalid request")
	// ErrResponse: an upstream answer (whole or streamed) that cannot be
	// put in the client's dialect: not JSON, the wrong shape, or content
	// the client's dialect has no form for. The upstream failed: 502.
	ErrResponse = errors.New("translate: untranslatable response")
	// ErrTruncated: Close on a stream that ended before its terminator.
	// Nothing was emitted for the missing end: the relay adds its own
	// error event in the client's dialect.
	ErrTruncated = errors.New("translate: stream ended before its terminator")
	// ErrStreamFailed: Close on a stream whose upstream sent an error
	// event; it went to the client translated, so the relay must not add
	// another.
	ErrStreamFailed = errors.New("translate: upstream stream sent an error event")
)

// Error is a request that cannot be translated, located precisely.
type Error struct {
	// Kind is ErrUntranslatable or ErrInvalid.
	Kind error
	// Param is the parameter's name without indices, as Options.Drop
	// lists it: "n", "temperature", "messages.name",
	// "messages.content.cache_control".
	Param string
	// Path locates the value in the body: "messages[2].content[0].cache_control".
	Path string
	// Reason says why, in words a client can act on.
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v: %s: %s", e.Kind, e.Path, e.Reason)
}

func (e *Error) Unwrap() error { return e.Kind }

// Options shape a request translation.
type Options struct {
	// Drop lists parameters (Error.Param names) that may be removed when
	// the target dialect cannot carry them, instead of refusing the
	// request. An entry matches a Param equal to it or ending in "."+it,
	// so "cache_control" drops every cache_control, while
	// "tools.cache_control" drops only the tools'. "*" matches everything
	// droppable. Whatever is dropped is reported in Translated.Dropped.
	// ErrInvalid errors are never dropped.
	Drop []string
	// DefaultMaxTokens is Anthropic's required max_tokens for an OpenAI
	// request that sets neither max_tokens nor max_completion_tokens.
	// Zero means DefaultMaxTokens.
	DefaultMaxTokens int64
	// LegacyMaxTokens writes OpenAI's output cap as max_tokens instead of
	// max_completion_tokens, for older OpenAI-compatible servers.
	LegacyMaxTokens bool
	// Unsupported says what happens to a parameter the target cannot
	// carry and Drop does not list (unsupported.go).
	Unsupported Unsupported
	// Items resolves a Responses API item_reference (ResponsesToChat)
	// to the item it names, as the host kept it from an answer it
	// bridged; nil, or not found: the reference is refused.
	Items func(id string) (json.RawMessage, bool)
}

// DefaultMaxTokens is the max_tokens an Anthropic request gets when its
// OpenAI source set none and Options.DefaultMaxTokens is zero.
const DefaultMaxTokens = 4096

// Translated is a request in the target dialect.
type Translated struct {
	// Body is the request body, ready to send.
	Body []byte
	// NoStore: a Responses API request said store: false, so the items
	// of its answer must not be kept for item_reference.
	NoStore bool
	// Dropped lists, in the order met and without repeats, the Params
	// that Options.Drop allowed to be removed: for a response header.
	Dropped []string
	// Stream is the request's stream flag.
	Stream bool
	// IncludeUsage is what an OpenAI client asked with
	// stream_options.include_usage; pass it to NewStreamToOpenAI. For an
	// Anthropic client it is false: StreamToAnthropic always reports
	// usage, as Anthropic's streams do.
	IncludeUsage bool
}

// conv carries one translation's options and what it dropped.
type conv struct {
	opts Options
	Bender
	// maxDefaulted: the OpenAI request set no output cap, and
	// Anthropic's required max_tokens is the default.
	maxDefaulted bool
}

// refuse reports that param, at path, cannot be translated. It returns
// nil if it is dropped (the caller then leaves it out), else the *Error
// to return. Whether param changes the answer's shape is Neutral's
// verdict, one table for every translator.
func (c *conv) refuse(param, path, reason string) error {
	return c.Bender.Refuse(param, path, reason, Neutral(param))
}

func invalid(param, path, reason string) error {
	return &Error{Kind: ErrInvalid, Param: param, Path: path, Reason: reason}
}

func badResponse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrResponse, fmt.Sprintf(format, args...))
}
