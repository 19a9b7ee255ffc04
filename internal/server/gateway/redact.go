package gateway

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
)

// No configured key, and nothing shaped like a bearer token, reaches a
// client, a log line or a metric. The gateway's own messages never carry
// one; what a provider sends back might (an upstream that echoes the
// Authorization header it received in a 401's body, a debug header), so
// provider bytes are scrubbed on the way through:
//
//   - error bodies, response header values and the request id the log
//     keeps lose the provider's secrets and anything bearer-shaped
//     (keyScrub.text);
//   - success bodies, streamed or whole, lose the provider's secrets
//     wherever they appear, even split across reads (keyScrub.scrub and
//     partial). They are not searched for other bearer-shaped text: a
//     model's answer may quote "Bearer abc123" in code it was asked to
//     write.
//
// A provider's secrets are its key and the values of any credential
// header the operator sets for it (providers[].headers: api-key, say).

// bearerLike matches credentials in text: a bearer token, or a key in the
// shapes OpenAI-style and Anthropic providers issue.
var bearerLike = regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/=-]{8,}|\bsk-[A-Za-z0-9_-]{16,}`)

var redacted = []byte("[redacted]")

// keyScrub blanks a provider's secrets out of what it sends back.
type keyScrub struct{ keys [][]byte }

// newKeyScrub scrubs the given secrets; those too short to mistake for
// anything else (under 8 bytes, or empty for a keyless provider) are left
// out, since blanking them would mangle ordinary text.
func newKeyScrub(secrets ...string) keyScrub {
	var k keyScrub
	for _, s := range secrets {
		if len(s) >= 8 {
			k.keys = append(k.keys, []byte(s))
		}
	}
	return k
}

// text removes the secrets and bearer-shaped tokens from b.
func (k keyScrub) text(b []byte) []byte {
	for _, key := range k.keys {
		if bytes.Contains(b, key) {
			b = bytes.ReplaceAll(b, key, redacted)
		}
	}
	return bearerLike.ReplaceAll(b, redacted)
}

// scrub blanks every whole occurrence of a secret in p, in place, with
// asterisks of the same length, so a Content-Length stays true.
func (k keyScrub) scrub(p []byte) {
	for _, key := range k.keys {
		for i := 0; ; {
			j := bytes.Index(p[i:], key)
			if j < 0 {
				break
			}
			for n := range key {
				p[i+j+n] = '*'
			}
			i += j + len(key)
		}
	}
}

// partial is how many bytes at the end of p could be the start of a
// secret: a relay holds them back until the next read shows whether
// they are.
func (k keyScrub) partial(p []byte) int {
	hold := 0
	for _, key := range k.keys {
		for n := min(len(key)-1, len(p)); n > hold; n-- {
			if bytes.HasPrefix(key, p[len(p)-n:]) {
				hold = n
				break
			}
		}
	}
	return hold
}

// headers redacts the secrets and bearer-shaped tokens from every value
// of h. A cheap look for the tell-tale substrings comes first: headers
// are on every response, and almost never hold either.
func (k keyScrub) headers(h http.Header) {
	for name, vv := range h {
		for i, v := range vv {
			if !k.mayHold(v) {
				continue
			}
			if r := k.text([]byte(v)); !bytes.Equal(r, []byte(v)) {
				h[name] = append([]string(nil), vv...) // not the provider's slice
				h[name][i] = string(r)
				vv = h[name]
			}
		}
	}
}

func (k keyScrub) mayHold(v string) bool {
	if strings.Contains(v, "sk-") {
		return true
	}
	for _, key := range k.keys {
		if strings.Contains(v, string(key)) {
			return true
		}
	}
	for i := 0; i+6 <= len(v); i++ {
		if v[i]|0x20 == 'b' && strings.EqualFold(v[i:i+6], "bearer") {
			return true
		}
	}
	return false
}

// logSafe makes a provider's value fit for the log: secrets redacted,
// only the characters an id uses, and at most 128 of them.
func (k keyScrub) logSafe(v string) string {
	if k.mayHold(v) {
		v = string(k.text([]byte(v)))
	}
	if len(v) > 128 {
		v = v[:128]
	}
	if strings.IndexFunc(v, notIDChar) < 0 {
		return v // the usual case: nothing to change, nothing to allocate
	}
	return strings.Map(func(r rune) rune {
		if notIDChar(r) {
			return '_'
		}
		return r
	}, v)
}

func notIDChar(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:[]", r))
}

// A stream's answer comes a few characters an event, so a secret a
// provider echoes (a model made to repeat its key) is split across
// events, with JSON between the parts: no one event holds it whole.
// eventScrub follows the answer's text from event to event: when the
// text at an event's end could begin a secret (minHeld bytes of one or
// more), the event is held back until the text that follows shows whether
// it does; if it does, every part of the secret is blanked, in the held
// events and the new one, before any of them goes on. Text that cannot
// begin a secret costs nothing; text that could is late by an event.
// The answer's text is the string values of the fields that carry it in
// OpenAI's and Anthropic's streams (textFields); a secret split across
// two choices of one stream (n > 1) is not followed.

// minHeld is the shortest start of a secret an event is held back for.
// Shorter ones ("sk") begin too much ordinary text to hold every such
// event; the rest of the secret, in the events after, is blanked all
// the same when it follows held text, and what a client could see is at
// most minHeld-1 bytes of its start.
const minHeld = 3

// textFields are the JSON fields whose string values carry a streamed
// answer's text: chat and completion deltas, tool-call arguments,
// Anthropic's text, thinking and partial_json deltas, and the Responses
// API's delta events.
var textFields = [][]byte{
	[]byte(`"content"`), []byte(`"text"`), []byte(`"arguments"`), []byte(`"refusal"`),
	[]byte(`"partial_json"`), []byte(`"thinking"`), []byte(`"delta"`),
}

// eventScrub is one stream's cross-event scrubbing state.
type eventScrub struct {
	held []byte // events held back, whole, in order
	// text is the answer's text so far, at most a secret's length less
	// one, that could begin a secret; pos, where each of its bytes is in
	// held, or -1 for one that has gone out.
	text    []byte
	pos     []int
	out     []byte // what events returns when it is not p itself
	scratch []byte
}

// events scrubs whole events p, in place and across events (see above),
// and returns what goes on: p, or its own bytes when events are held or
// released.
func (s *eventScrub) events(k keyScrub, p []byte) []byte {
	if len(k.keys) == 0 {
		return p
	}
	k.scrub(p)
	own := len(s.held) > 0
	s.out = s.out[:0]
	for off := 0; off < len(p); {
		e := p[off : off+eventEnd(p[off:])]
		fs, fe, ls, le := textPieces(e)
		// The text so far, and the event's first piece after it.
		cont := s.scratch[:0]
		if len(s.text) > 0 && fs >= 0 {
			cont = append(append(cont, s.text...), e[fs:fe]...)
			s.blankAcross(k, cont, e, fs)
		}
		s.scratch = cont
		// The text at the event's end that could begin a secret, and how
		// many of its bytes came before the event.
		var tail []byte
		before := 0
		switch {
		case fs < 0:
			// No text (a role, a finish, a block's end, the
			// terminator): the answer's text has ended, and what is
			// held goes on before it, so nothing is held at the end.
		case ls == fs && len(s.text) > 0:
			n := k.partial(cont)
			tail, before = cont[len(cont)-n:], max(0, len(s.text)-(len(cont)-n))
		default:
			tail = e[ls:le]
			tail = tail[len(tail)-k.partial(tail):]
		}
		keepHeld := false // the tail begins in held events, still held
		for _, q := range s.pos[len(s.pos)-before:] {
			keepHeld = keepHeld || q >= 0
		}
		hold := len(tail) >= minHeld
		keepHeld = keepHeld && hold
		if hold && !own {
			s.out, own = append(s.out, p[:off]...), true
		}
		if own && !keepHeld {
			s.out = append(s.out, s.held...)
		}
		// The new text's positions: those from before (-1 once gone
		// out), then the event's own, at their place in held.
		pos := append(s.pos[:0], s.pos[len(s.pos)-before:]...)
		if !keepHeld {
			s.held = s.held[:0]
			for i := range pos {
				pos[i] = -1
			}
		}
		base := len(s.held)
		if !hold {
			base = -1 // e goes on now
		}
		for i := le - (len(tail) - before); i < le; i++ {
			if base < 0 {
				pos = append(pos, -1)
			} else {
				pos = append(pos, base+i)
			}
		}
		if hold {
			s.held = append(s.held, e...)
		} else if own {
			s.out = append(s.out, e...)
		}
		s.text = append(s.text[:0], tail...)
		s.pos = pos
		off += len(e)
	}
	if !own {
		return p
	}
	return s.out
}

// blankAcross blanks every secret in cont (the held text, then piece
// e[at:] of event e) that begins in the held text: its bytes in held and
// in e become asterisks.
func (s *eventScrub) blankAcross(k keyScrub, cont, e []byte, at int) {
	for _, key := range k.keys {
		for i := 0; i < len(s.text); i++ {
			if !bytes.HasPrefix(cont[i:], key) {
				continue
			}
			for j := i; j < i+len(key); j++ {
				if j < len(s.text) {
					if s.pos[j] >= 0 {
						s.held[s.pos[j]] = '*'
					}
				} else {
					e[at+j-len(s.text)] = '*'
				}
			}
		}
	}
}

// flush is what is still held when the stream ends: it goes out, since
// nothing followed to complete a secret. Only a stream whose last event
// ends in text holds anything then (an event without text releases what
// is held), so nothing a filter before adds at the end (a trailer) comes
// before the events it follows.
func (s *eventScrub) flush() []byte {
	out := s.held
	s.held, s.text, s.pos = nil, nil, nil
	return out
}

// part passes on part of an event too long to hold, after the events
// held before it: a part is not followed across.
func (s *eventScrub) part(k keyScrub, p []byte) []byte {
	k.scrub(p)
	if len(s.held) == 0 {
		return p
	}
	s.out = append(append(s.out[:0], s.held...), p...)
	s.held, s.text, s.pos = s.held[:0], s.text[:0], s.pos[:0]
	return s.out
}

// textPieces finds the answer text in event e: the first and last string
// values of textFields, as [fs:fe] and [ls:le] (raw, escapes and all);
// -1s when there are none.
func textPieces(e []byte) (fs, fe, ls, le int) {
	fs, fe, ls, le = -1, -1, -1, -1
	for _, f := range textFields {
		for from := 0; ; {
			i := bytes.Index(e[from:], f)
			if i < 0 {
				break
			}
			i += from + len(f)
			from = i
			// : and the opening quote, with any spaces between.
			for i < len(e) && (e[i] == ' ' || e[i] == '\t') {
				i++
			}
			if i >= len(e) || e[i] != ':' {
				continue
			}
			i++
			for i < len(e) && (e[i] == ' ' || e[i] == '\t') {
				i++
			}
			if i >= len(e) || e[i] != '"' {
				continue
			}
			start := i + 1
			end := start
			for end < len(e) && e[end] != '"' {
				if e[end] == '\\' {
					end++
				}
				end++
			}
			end = min(end, len(e))
			if fs < 0 || start < fs {
				fs, fe = start, end
			}
			if start > ls {
				ls, le = start, end
			}
		}
	}
	return
}
