package translate

import (
	"fmt"
	"slices"
	"strings"
)

// Unsupported says what a translation does with a parameter its target
// cannot carry, when Options.Drop does not name it. Every translator
// (this package's, and the native codecs of internal/wire/gemini and
// internal/wire/bedrock) decides through a Bender, so one rule bends
// every dialect alike.
type Unsupported uint8

const (
	// UnsupportedDefault drops a parameter that has no effect on the
	// answer's shape (a seed, a user id, logprobs where there are none),
	// and refuses one that has (n > 1, audio).
	UnsupportedDefault Unsupported = iota
	// UnsupportedDrop drops every parameter the target cannot carry.
	UnsupportedDrop
	// UnsupportedRefuse refuses every one, the shape-neutral ones too.
	UnsupportedRefuse
)

// ParseUnsupported reads the config's on_unsupported: "" is the default.
func ParseUnsupported(s string) (Unsupported, error) {
	switch s {
	case "":
		return UnsupportedDefault, nil
	case "drop":
		return UnsupportedDrop, nil
	case "refuse":
		return UnsupportedRefuse, nil
	}
	return 0, fmt.Errorf("on_unsupported is %q: write drop or refuse, or leave it out to drop only what does not change the answer's shape", s)
}

func (u Unsupported) String() string {
	switch u {
	case UnsupportedDrop:
		return "drop"
	case UnsupportedRefuse:
		return "refuse"
	}
	return "default"
}

// Bender decides, parameter by parameter, whether what a target cannot
// carry is dropped or refused, and remembers what it dropped. Not safe
// for concurrent use: one per translation.
type Bender struct {
	drop        []string
	unsupported Unsupported
	dropped     []string
	// more: parameters past maxDropped were dropped and not listed.
	more bool
}

// maxDropped bounds the parameters Dropped lists (the gateway sends
// them in a header and a log line): a body of many distinct unknown
// keys, all dropped, would otherwise list every one.
const maxDropped = 64

// NewBender returns a Bender for one translation under opts.
func NewBender(opts Options) Bender {
	return Bender{drop: opts.Drop, unsupported: opts.Unsupported}
}

// Refuse reports that param (its name without indices, as Options.Drop
// lists it), at path, cannot be carried. neutral says it has no effect
// on the answer's shape. It returns nil when the parameter is dropped
// (the caller leaves it out, and Dropped names it), else the *Error that
// refuses the request.
func (b *Bender) Refuse(param, path, reason string, neutral bool) error {
	if b.drops(param, neutral) {
		switch {
		case slices.Contains(b.dropped, param):
		case len(b.dropped) < maxDropped:
			b.dropped = append(b.dropped, param)
		default:
			b.more = true
		}
		return nil
	}
	return &Error{Kind: ErrUntranslatable, Param: param, Path: path, Reason: reason}
}

func (b *Bender) drops(param string, neutral bool) bool {
	for _, d := range b.drop {
		if d == "*" || d == param || strings.HasSuffix(param, "."+d) {
			return true
		}
	}
	switch b.unsupported {
	case UnsupportedDrop:
		return true
	case UnsupportedRefuse:
		return false
	}
	return neutral
}

// Dropped lists what was dropped, in the order met and without repeats:
// the first maxDropped, then "..." when more were dropped.
func (b *Bender) Dropped() []string {
	if b.more {
		return append(slices.Clip(b.dropped), "...")
	}
	return b.dropped
}

// Neutral reports whether a parameter (an Error.Param name) leaves the
// answer's shape alone, so that UnsupportedDefault drops it rather than
// refuse the request. Neutral: what tunes sampling or cost, identifies
// the caller, or asks for extras a client can do without (a seed, the
// penalties, top_k, temperature above Anthropic's 1, logprobs, store,
// service tiers, metadata, cache hints, an image's detail level, a
// message's name, a reasoning budget, past thinking blocks, how a tool's
// input is cut into stream events; and from the Responses API, include,
// truncation auto, text.verbosity, a reasoning summary, and in the input
// past reasoning items, an item's status or phase, and an earlier
// answer's annotations and logprobs). Not
// neutral: what changes how many answers come, what they are made of or
// where they end (n, audio and modalities, logit_bias, stop sequences,
// a late system message, tools and content blocks the target lacks),
// and every parameter this table does not know.
func Neutral(param string) bool {
	if param == "cache_control" || strings.HasSuffix(param, ".cache_control") || strings.HasPrefix(param, "metadata.") {
		return true
	}
	switch param {
	case "seed", "user", "logprobs", "top_logprobs", "presence_penalty", "frequency_penalty",
		"temperature", "top_k", "store", "service_tier", "metadata", "prediction",
		"safety_identifier", "prompt_cache_key", "prompt_cache_retention",
		"parallel_tool_calls", "reasoning_effort", "thinking", "output_config.effort",
		"tools.eager_input_streaming",
		"stream_options.include_obfuscation", "messages.name",
		"messages.content.image_url.detail",
		"messages.content.thinking", "messages.content.redacted_thinking",
		"include", "truncation", "text.verbosity", "reasoning.summary", "reasoning.generate_summary",
		"input.reasoning", "input.status", "input.phase",
		"input.content.annotations", "input.content.logprobs":
		return true
	}
	return false
}
