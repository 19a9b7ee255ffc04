// Package sseenc writes server-sent events in the many legal forms real
// providers use: JSON with or without spaces, pretty-printed over several
// data lines, in sorted or shuffled key order, with \u escapes; CRLF or
// lone-CR line ends, data: without its space, id:/retry: fields, comment
// lines, with or without event: lines. Each form carries the same values,
// so a reader that judges a stream by its meaning decides the same on all
// of them, and one that matches bytes is caught out.
//
// An Encoding is parsed from words joined by '+' ("spaced+crlf"); the zero
// Encoding is compact, which writes the data as given. A Stream writes one
// stream's events in an Encoding. Some words choose what a stream holds
// rather than how an event is spelled (nodone, noping, usagelast,
// keepalive, pings); the writer of the stream reads them from the
// Encoding's methods and acts on them itself.
//
// The package is pure: no clock, no goroutines, no I/O. Decode is the
// reference reader that tests judge written streams by.
package sseenc

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

type layout uint8

const (
	compact layout = iota
	spaced         // Python json.dumps' separators: ", " and ": "
	pretty         // indent 2, one data: line per JSON line
)

// Encoding is one legal way of writing a stream. The zero value is
// compact: every event as today's OpenAI and Anthropic APIs write it.
type Encoding struct {
	layout  layout
	ascii   bool // ensure_ascii: non-ASCII as \uXXXX, surrogate pairs beyond the BMP
	sortKey bool
	shuffle bool
	escaped bool // ASCII letters in strings (keys too) as \u00XX
	slashes bool // '/' as \/

	eol      string // "" is "\n"
	noSpace  bool
	idRetry  bool
	comments bool
	noEvent  bool
	oaiEvent bool

	noDone, noPing, usageLast bool
	keepComment, keepPing     bool
	keepEvery                 time.Duration
}

// The words Parse knows, in the order String writes them.
var words = []string{
	"compact", "spaced", "pydefault", "pretty", "sortkeys", "shuffle", "escaped", "slashes",
	"crlf", "cr", "nospace", "idretry", "comments", "noevent", "oaievent",
	"nodone", "noping", "usagelast", "keepalive", "pings",
}

// Words lists every word Parse accepts. keepalive and pings also take an
// interval: "keepalive:250ms".
func Words() []string { return append([]string(nil), words...) }

// Parse reads words joined by '+', case-insensitive, e.g. "spaced+crlf"
// or "pretty+noevent+pings:500ms". "" is compact. The words:
//
//	compact    the data as given (the default)
//	spaced     ", " and ": " between items, raw UTF-8 (Python json.dumps)
//	pydefault  spaced, with non-ASCII as \uXXXX (json.dumps' ensure_ascii)
//	pretty     indent 2, one data: line per JSON line
//	sortkeys   object keys in sorted order
//	shuffle    object keys in a random order, drawn per event
//	escaped    ASCII letters in strings and keys as \u00XX
//	slashes    '/' in strings as \/
//	crlf, cr   CRLF or lone-CR line ends (LF by default)
//	nospace    "data:{...}" and "event:x", no space after the colon
//	idretry    an id: line per event, a retry: line before the first
//	comments   comment lines between events
//	noevent    no event: lines (Anthropic data-only)
//	oaievent   "event: message" on events that have no name (OpenAI chunks)
//	nodone     no end marker ([DONE], message_stop)        (the writer's)
//	noping     no Anthropic ping after the head             (the writer's)
//	usagelast  usage after the finish as a chunk of its own (the writer's)
//	keepalive  comment lines during a stall, every interval (the writer's)
//	pings      Anthropic ping events during a stall         (the writer's)
func Parse(s string) (Encoding, error) {
	var e Encoding
	var layouts []string
	s = strings.TrimSpace(s)
	if s == "" {
		return e, nil
	}
	for _, raw := range strings.Split(s, "+") {
		w, arg, hasArg := strings.Cut(strings.ToLower(strings.TrimSpace(raw)), ":")
		if hasArg && w != "keepalive" && w != "pings" {
			return Encoding{}, fmt.Errorf("encoding %q: %q takes no argument (only keepalive and pings take an interval)", s, raw)
		}
		switch w {
		case "compact", "spaced", "pydefault", "pretty":
			layouts = append(layouts, w)
		case "sortkeys":
			e.sortKey = true
		case "shuffle":
			e.shuffle = true
		case "escaped":
			e.escaped = true
		case "slashes":
			e.slashes = true
		case "crlf", "cr":
			if e.eol != "" {
				return Encoding{}, fmt.Errorf("encoding %q: one line end only (crlf or cr)", s)
			}
			e.eol = map[string]string{"crlf": "\r\n", "cr": "\r"}[w]
		case "nospace":
			e.noSpace = true
		case "idretry":
			e.idRetry = true
		case "comments":
			e.comments = true
		case "noevent":
			e.noEvent = true
		case "oaievent":
			e.oaiEvent = true
		case "nodone":
			e.noDone = true
		case "noping":
			e.noPing = true
		case "usagelast":
			e.usageLast = true
		case "keepalive", "pings":
			if w == "keepalive" {
				e.keepComment = true
			} else {
				e.keepPing = true
			}
			if hasArg {
				d, err := time.ParseDuration(arg)
				if err != nil || d <= 0 {
					return Encoding{}, fmt.Errorf("encoding %q: %s:%s: want a positive interval, e.g. %s:250ms", s, w, arg, w)
				}
				if e.keepEvery != 0 && e.keepEvery != d {
					return Encoding{}, fmt.Errorf("encoding %q: two keepalive intervals", s)
				}
				e.keepEvery = d
			}
		default:
			return Encoding{}, fmt.Errorf("encoding %q: unknown word %q; want words joined by '+' from: %s", s, raw, strings.Join(words, ", "))
		}
	}
	for _, l := range layouts {
		switch l {
		case "spaced":
			e.layout = max(e.layout, spaced)
		case "pydefault":
			e.layout, e.ascii = max(e.layout, spaced), true
		case "pretty":
			e.layout = pretty
		}
	}
	switch {
	case len(layouts) > 1 && contains(layouts, "compact"):
		return Encoding{}, fmt.Errorf("encoding %q: compact excludes %s", s, strings.Join(layouts, ", "))
	case e.sortKey && e.shuffle:
		return Encoding{}, fmt.Errorf("encoding %q: sortkeys and shuffle exclude each other", s)
	case e.noEvent && e.oaiEvent:
		return Encoding{}, fmt.Errorf("encoding %q: noevent and oaievent exclude each other", s)
	}
	return e, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// MustParse is Parse for literals a program gets right.
func MustParse(s string) Encoding {
	e, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return e
}

// String is the encoding's words in canonical order: Parse(e.String())
// is e.
func (e Encoding) String() string {
	var w []string
	add := func(on bool, word string) {
		if on {
			w = append(w, word)
		}
	}
	add(e.layout == spaced && !e.ascii, "spaced")
	add(e.layout == spaced && e.ascii, "pydefault")
	add(e.layout == pretty, "pretty")
	add(e.layout == pretty && e.ascii, "pydefault")
	add(e.sortKey, "sortkeys")
	add(e.shuffle, "shuffle")
	add(e.escaped, "escaped")
	add(e.slashes, "slashes")
	add(e.eol == "\r\n", "crlf")
	add(e.eol == "\r", "cr")
	add(e.noSpace, "nospace")
	add(e.idRetry, "idretry")
	add(e.comments, "comments")
	add(e.noEvent, "noevent")
	add(e.oaiEvent, "oaievent")
	add(e.noDone, "nodone")
	add(e.noPing, "noping")
	add(e.usageLast, "usagelast")
	every := ""
	if e.keepEvery != 0 {
		every = ":" + e.keepEvery.String()
	}
	add(e.keepComment, "keepalive"+every)
	add(e.keepPing, "pings"+every)
	if len(w) == 0 {
		return "compact"
	}
	return strings.Join(w, "+")
}

// IsCompact reports whether e is the default: events written exactly as
// given, nothing left out or added.
func (e Encoding) IsCompact() bool { return e == Encoding{} }

// reencodes reports whether the JSON itself is rewritten.
func (e Encoding) reencodes() bool {
	return e.layout != compact || e.ascii || e.sortKey || e.shuffle || e.escaped || e.slashes
}

// NoDone: the stream leaves out its end marker (OpenAI's data: [DONE],
// Anthropic's message_stop), as many servers do.
func (e Encoding) NoDone() bool { return e.noDone }

// NoPing: an Anthropic stream sends no ping after its head.
func (e Encoding) NoPing() bool { return e.noPing }

// UsageLast: an OpenAI stream sends its usage after the finish, as a
// chunk of its own with no choices, whether or not it was asked for.
func (e Encoding) UsageLast() bool { return e.usageLast }

// Keepalive says what a stream sends while it stalls: comment lines,
// Anthropic ping events (a stream without pings sends comments instead),
// or both; neither is silence.
func (e Encoding) Keepalive() (comment, ping bool) { return e.keepComment, e.keepPing }

// KeepaliveEvery is the interval the words gave ("keepalive:250ms"), or
// 0 when they gave none and the writer picks its own.
func (e Encoding) KeepaliveEvery() time.Duration { return e.keepEvery }

// LineEnd is the line terminator events are written with.
func (e Encoding) LineEnd() string {
	if e.eol == "" {
		return "\n"
	}
	return e.eol
}

// ErrLineBreak is AppendEvent's panic when an event name holds a line
// break, which no framing can carry.
var ErrLineBreak = errors.New("sseenc: event name with a line break")
