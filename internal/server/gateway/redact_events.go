package gateway

import (
	"bytes"
	"cmp"
	"slices"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// A stream's answer comes a few characters an event, so a secret a
// provider echoes (a model made to repeat its key) is split across
// events, with JSON between the parts: no one event holds it whole.
// eventScrub reads each event's data with a JSON tokenizer and compares
// every string in it, decoded, with the secrets: a whole secret is
// blanked where it is, and the text a string ends with is followed into
// the string at the same place (the same names and array positions from
// the top) in the next event. When that text could begin a secret
// (minHeld bytes of one or more), the event is held back until the next
// shows whether it does; if it does, every part of the secret is
// blanked, in the held events and the new one, before any of them goes
// on. A secret is blanked by its characters: the string that holds it is
// rewritten with one '*' a byte of it, whatever escapes spelt it, so an
// event can change length and the scrubber then returns bytes of its
// own. Nothing else of an event changes.
//
// Which strings carry an answer is not asked: any string a model writes
// can carry a key (a tool call's arguments, an error's message), and a
// provider may escape a field's name. Object names are searched for
// whole secrets, not followed across events. Text that cannot begin a
// secret costs nothing; text that could is late by an event. A secret
// split across two choices of one stream (n > 1) is followed only as
// far as the choices keep their array positions, and an event without
// the string a held text is in (a ping between deltas) lets it go.
//
// The cheap look comes first (keyScrub.mayBegin): events with no string
// ending in a secret's start, no whole secret and no escape that could
// spell one go on as they came, unread, when nothing is followed.

// minHeld is the shortest start of a secret an event is held back for.
// Shorter ones ("sk") begin too much ordinary text to hold every such
// event; the rest of the secret, in the events after, is blanked all
// the same when it follows held text, and what a client could see is at
// most minHeld-1 bytes of its start.
const minHeld = 3

// scrubDecodeOpts read a provider's event as it is: duplicate names are
// not a reason to stop (and checking them costs a map), nor is invalid
// UTF-8 in a string.
var scrubDecodeOpts = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// eventScrub is one stream's cross-event scrubbing state.
type eventScrub struct {
	// held are events held back, whole, in order, as they came; heldStr
	// where in held the strings are that tails or heldBl point into;
	// heldBl, what of those strings is blanked when they go on.
	held    []byte
	heldStr []span
	heldBl  []blank
	out     []byte // what events returns when it is not p itself
	// r reads events and follows their text: taken from eventReaders
	// when an event must be read, given back when nothing is followed.
	r *eventReader
}

// eventReader is what reading an event takes, and the text followed
// from the last one: pooled, so that a stream whose events are read
// costs no allocation for it, per event or per stream.
type eventReader struct {
	// tails is the text each string of the last event ended with that
	// could begin a secret, by the string's place; next, the current
	// event's, being built.
	tails, next []tail

	dec   *jsontext.Decoder
	rd    bytes.Reader
	data  []byte
	lines []dataLine
	spans []span    // the event's strings, quotes included, where they are in it
	meta  []strMeta // and what they are
	stack []frame
	bl    []blank // blanks in the event's strings
	refs  []int   // the event's string i is held as heldStr[refs[i]], or -1
	cont  []byte
	name  []byte
}

var eventReaders = sync.Pool{New: func() any { return new(eventReader) }}

// following reports whether text is followed from an event before.
func (s *eventScrub) following() bool { return s.r != nil && len(s.r.tails) > 0 }

// release gives the reader back when nothing is followed.
func (s *eventScrub) release() {
	if s.r != nil && len(s.r.tails) == 0 {
		eventReaders.Put(s.r)
		s.r = nil
	}
}

// unfollow stops following text, and gives the reader back.
func (s *eventScrub) unfollow() {
	if s.r != nil {
		s.r.tails = s.r.tails[:0]
		s.release()
	}
}

// span is where a JSON string is, quotes included: b[s:e].
type span struct{ s, e int }

// blank is what of a string's decoded bytes become asterisks: [from,to)
// of string str (an index into heldStr, or into the event's spans).
type blank struct{ str, from, to int }

// tail is text at the end of strings at one place (path) that could
// begin a secret, and where each byte of it is: pos.str is its string
// in heldStr, -1 when it has gone to the client, or -2-i for the
// current event's string i; pos.off, its place in that string, decoded.
type tail struct {
	path uint64
	used bool
	text []byte
	pos  []bytePos
}

type bytePos struct{ str, off int }

type strMeta struct {
	path uint64
	name bool
}

// frame is an object or array being read: its path; in an object, the
// member's path and whether a name comes next; in an array, the index
// of the next element.
type frame struct {
	h, member uint64
	arr       bool
	wantName  bool
	idx       int
}

// dataLine is where a data line's value is in the event's data (joined
// by "\n") and in the event.
type dataLine struct{ data, ev, n int }

// events scrubs whole events p, in place and across events (see above),
// and returns what goes on: p, or its own bytes when events are held,
// released or rewritten.
func (s *eventScrub) events(k *keyScrub, p []byte) []byte {
	if len(k.keys) == 0 || !s.following() && !k.mayBegin(p) {
		return p
	}
	own := len(s.held) > 0
	if own {
		s.out = s.out[:0]
	}
	cr := bytes.IndexByte(p, '\r') >= 0
	for off := 0; off < len(p); {
		n := sseEventEnd(p[off:], cr)
		e := p[off : off+n]
		if !s.following() && !k.mayBegin(e) {
			if own {
				s.out = append(s.out, e...)
			}
		} else {
			s.event(k, e, &own, p[:off])
		}
		off += n
	}
	s.release()
	if !own {
		return p
	}
	return s.out
}

// own makes s.out what goes on, starting with prefix (what went as it
// came before).
func (s *eventScrub) own(own *bool, prefix []byte) {
	if !*own {
		s.out = append(s.out[:0], prefix...)
		*own = true
	}
}

// event scrubs event e, held or not, and decides what goes on.
func (s *eventScrub) event(k *keyScrub, e []byte, own *bool, prefix []byte) {
	if s.r == nil {
		s.r = eventReaders.Get().(*eventReader)
	}
	if !s.read(k, e) {
		// No data: nothing said, no text ended; it keeps its place.
		k.scrub(e)
		if len(s.held) > 0 {
			s.held = append(s.held, e...)
		} else if *own {
			s.out = append(s.out, e...)
		}
		return
	}
	hold, refHeld := false, false
	for _, t := range s.r.next {
		hold = hold || len(t.text) >= minHeld
		for _, q := range t.pos {
			refHeld = refHeld || q.str >= 0
		}
	}
	if len(s.held) > 0 && !(hold && refHeld) {
		// What is held goes on (s.held is only ever set once own).
		s.out = emit(s.out, s.held, s.heldStr, s.heldBl)
		s.held, s.heldStr, s.heldBl = s.held[:0], s.heldStr[:0], s.heldBl[:0]
		s.forget(func(q bytePos) bool { return q.str >= 0 })
	}
	if hold {
		s.own(own, prefix)
		base := len(s.held)
		s.held = append(s.held, e...)
		s.r.refs = s.r.refs[:0]
		for range s.r.spans {
			s.r.refs = append(s.r.refs, -1)
		}
		for _, b := range s.r.bl {
			b.str = s.heldRef(b.str, base)
			s.heldBl = append(s.heldBl, b)
		}
		for i := range s.r.next {
			for j, q := range s.r.next[i].pos {
				if q.str <= -2 {
					s.r.next[i].pos[j].str = s.heldRef(-2-q.str, base)
				}
			}
		}
	} else {
		if len(s.r.bl) > 0 {
			s.own(own, prefix)
			s.out = emit(s.out, e, s.r.spans, s.r.bl)
		} else if *own {
			s.out = append(s.out, e...)
		}
		s.forget(func(q bytePos) bool { return q.str <= -2 })
	}
	s.r.tails, s.r.next = s.r.next, s.r.tails
}

// forget marks the bytes of the new tails that gone says have gone to
// the client.
func (s *eventScrub) forget(gone func(bytePos) bool) {
	for i := range s.r.next {
		for j, q := range s.r.next[i].pos {
			if gone(q) {
				s.r.next[i].pos[j].str = -1
			}
		}
	}
}

// heldRef is the heldStr index of the current event's string i, now held
// at base.
func (s *eventScrub) heldRef(i, base int) int {
	if s.r.refs[i] < 0 {
		s.r.refs[i] = len(s.heldStr)
		s.heldStr = append(s.heldStr, span{base + s.r.spans[i].s, base + s.r.spans[i].e})
	}
	return s.r.refs[i]
}

// read reads event e: its data's strings and their blanks (s.r.spans,
// s.r.meta, s.r.bl, and heldBl for secrets that began in held text), and
// the text they end with that could begin a secret (s.r.next). Bytes of e
// outside the data's strings lose whole secrets in place. It reports
// false when e has no data.
func (s *eventScrub) read(k *keyScrub, e []byte) bool {
	s.r.spans, s.r.meta, s.r.bl, s.r.next = s.r.spans[:0], s.r.meta[:0], s.r.bl[:0], s.r.next[:0]
	for i := range s.r.tails {
		s.r.tails[i].used = false
	}
	data, ok := s.dataOf(e)
	if !ok {
		return false
	}
	if !s.parse(data) {
		s.r.spans, s.r.meta = s.r.spans[:0], s.r.meta[:0]
	}
	last := 0
	for i, sp := range s.r.spans {
		sp = s.toEvent(sp)
		s.r.spans[i] = sp
		k.scrub(e[last:sp.s])
		last = sp.e
	}
	k.scrub(e[last:])
	for i := range s.r.spans {
		s.str(k, e, i)
	}
	return true
}

// str scrubs the event's string i: the secrets in it, with the text
// before it at its place, and the tail it leaves.
func (s *eventScrub) str(k *keyScrub, e []byte, i int) {
	sp, m := s.r.spans[i], s.r.meta[i]
	var old *tail
	if !m.name {
		for j := range s.r.tails {
			if t := &s.r.tails[j]; !t.used && t.path == m.path {
				t.used, old = true, t
				break
			}
		}
	}
	cont := s.r.cont[:0]
	if old != nil {
		cont = append(cont, old.text...)
	}
	base := len(cont)
	cont = appendDecoded(cont, e[sp.s+1:sp.e-1])
	s.r.cont = cont
	// Every secret that ends in the string: those in the text before it
	// were blanked when it came.
	for a, b := k.nextPlain(cont, 0); a >= 0; {
		na, nb := k.nextPlain(cont, a+1)
		for na >= 0 && na < b {
			b = max(b, nb)
			na, nb = k.nextPlain(cont, na+1)
		}
		if b > base {
			for q := a; q < base; q++ {
				if at := old.pos[q]; at.str >= 0 {
					s.heldBl = append(s.heldBl, blank{at.str, at.off, at.off + 1})
				}
			}
			s.r.bl = append(s.r.bl, blank{i, max(a, base) - base, b - base})
			for q := a; q < b; q++ {
				cont[q] = '*'
			}
		}
		a, b = na, nb
	}
	if m.name {
		return
	}
	n := partialPlain(k, cont)
	if n == 0 {
		return
	}
	t := s.newTail(m.path)
	t.text = append(t.text[:0], cont[len(cont)-n:]...)
	t.pos = t.pos[:0]
	for q := len(cont) - n; q < len(cont); q++ {
		if q < base {
			t.pos = append(t.pos, old.pos[q])
		} else {
			t.pos = append(t.pos, bytePos{-2 - i, q - base})
		}
	}
}

// newTail is the current event's tail at path, reusing a slot.
func (s *eventScrub) newTail(path uint64) *tail {
	for i := range s.r.next {
		if s.r.next[i].path == path {
			return &s.r.next[i]
		}
	}
	if len(s.r.next) < cap(s.r.next) {
		s.r.next = s.r.next[:len(s.r.next)+1]
	} else {
		s.r.next = append(s.r.next, tail{})
	}
	t := &s.r.next[len(s.r.next)-1]
	t.path, t.used = path, false
	return t
}

// flush is what is still held when the stream ends: it goes out, since
// nothing followed to complete a secret. Only a stream whose last event
// ends in text that could begin one holds anything then, so nothing a
// filter before adds at the end (a trailer) comes before the events it
// follows.
func (s *eventScrub) flush() []byte {
	s.unfollow()
	if len(s.held) == 0 {
		return nil
	}
	s.out = emit(s.out[:0], s.held, s.heldStr, s.heldBl)
	s.held, s.heldStr, s.heldBl = s.held[:0], s.heldStr[:0], s.heldBl[:0]
	return s.out
}

// part passes on part of an event too long to hold, after the events
// held before it: a part is scrubbed by its bytes (keyScrub.scrub, the
// relay holding back what could begin a secret, keyScrub.partial), not
// followed across.
func (s *eventScrub) part(k *keyScrub, p []byte) []byte {
	k.scrub(p)
	s.unfollow()
	if len(s.held) == 0 {
		return p
	}
	s.out = emit(s.out[:0], s.held, s.heldStr, s.heldBl)
	s.out = append(s.out, p...)
	s.held, s.heldStr, s.heldBl = s.held[:0], s.heldStr[:0], s.heldBl[:0]
	return s.out
}

// emit appends src to dst with the blanks bl made in its strings spans.
func emit(dst, src []byte, spans []span, bl []blank) []byte {
	if len(bl) == 0 {
		return append(dst, src...)
	}
	slices.SortFunc(bl, func(a, b blank) int {
		if c := cmp.Compare(spans[a.str].s, spans[b.str].s); c != 0 {
			return c
		}
		return cmp.Compare(a.from, b.from)
	})
	last := 0
	for i := 0; i < len(bl); {
		j := i + 1
		for j < len(bl) && bl[j].str == bl[i].str {
			j++
		}
		sp := spans[bl[i].str]
		dst = append(dst, src[last:sp.s+1]...)
		dst = blankString(dst, src[sp.s+1:sp.e-1], bl[i:j])
		last, i = sp.e-1, j
	}
	return append(dst, src[last:]...)
}

// blankString appends raw, a JSON string's inside, to dst with every
// character whose decoded bytes bl (sorted) touch written as one '*' a
// byte; the rest as it came, escapes and all.
func blankString(dst, raw []byte, bl []blank) []byte {
	var buf [4]byte
	for i, d := 0, 0; i < len(raw); {
		c, n := unescape(buf[:0], raw, i, true)
		if n <= 0 { // not from the tokenizer: a byte as it is
			c, n = append(buf[:0], raw[i]), 1
		}
		for len(bl) > 0 && bl[0].to <= d {
			bl = bl[1:]
		}
		if len(bl) > 0 && bl[0].from < d+len(c) {
			for range c {
				dst = append(dst, '*')
			}
		} else {
			dst = append(dst, raw[i:i+n]...)
		}
		i, d = i+n, d+len(c)
	}
	return dst
}

// appendDecoded appends what raw, a JSON string's inside, stands for.
func appendDecoded(dst, raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return append(dst, raw...)
	}
	for i := 0; i < len(raw); {
		var n int
		l := len(dst)
		if dst, n = unescape(dst, raw, i, true); n <= 0 {
			dst, n = append(dst[:l], raw[i]), 1
		}
		i += n
	}
	return dst
}

// partialPlain is how many bytes at the end of text (decoded) could be
// the start of a secret.
func partialPlain(k *keyScrub, text []byte) int {
	// The longest first: the earliest place, among the last longest-1
	// bytes, from which text's end is the start of a key that begins
	// with that byte.
	for j := max(0, len(text)-k.longest+1); j < len(text); j++ {
		if !k.begins(text[j]) {
			continue
		}
		for _, key := range k.bucket(text[j]) {
			if len(key) > len(text)-j && bytes.HasPrefix(key, text[j:]) {
				return len(text) - j
			}
		}
	}
	return 0
}
