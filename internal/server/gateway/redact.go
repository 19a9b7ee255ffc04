package gateway

import (
	"bytes"
	"cmp"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
)

// No credential reaches a client, a log line, a trace or a metric,
// whatever its source. The gateway's own messages never carry one; what
// a provider sends back might (an upstream that echoes the
// Authorization header it received in a 401's body, a debug header, a
// model made to repeat it), so provider bytes are scrubbed on the way
// through, on every path, by one type, keyScrub, reading one set:
//
//   - what a request's calls were made with (credentials,
//     redact_secrets.go): each provider's static secrets (its key, the
//     values of the headers the operator sets on its calls), joined
//     when a call to it is made, and whatever a signer reports as it
//     signs (native.UsedCredentials: an OAuth2 access token, a SigV4
//     access key id, signature, session token and the secret behind
//     them). Every request holds its own set; a stream's scrubbers read
//     it afresh for each read, so a continuation's credentials count
//     from its first byte;
//   - each secret in every form a body can give it: as it is,
//     percent-encoded, and base64 (standard and URL alphabets, at each
//     of the three alignments a secret can have inside a longer
//     encoding: the characters that depend on it alone), each of those
//     read through JSON's escapes (`\/` for '/', `\u0063` for 'c') as a
//     client decodes them (secretForms);
//   - error bodies, response header values, the request id the log
//     keeps, a verdict's reason and an upstream call's error in a trace
//     lose those, what is left of one cut short where a string ends (a
//     message a codec bounded), and anything shaped like a credential
//     (a bearer token, a provider key, a SigV4 Authorization, a Google
//     access token: keyScrub.text);
//   - success bodies, streamed or whole, lose the secrets wherever they
//     appear, even split across reads (keyScrub.scrub and partial) or
//     across a stream's events (eventScrub, redact_events.go). They are
//     not searched for other credential-shaped text: a model's answer
//     may quote "Bearer abc123" in code it was asked to write.
//
// keyScrub reads the escapes as it matches (it sees bytes with no
// grammar: a whole body, a part of one); eventScrub reads each event's
// JSON with a tokenizer and matches the decoded text.

// bearerLike matches credentials in text by their shape: a bearer token,
// a key in the shapes OpenAI-style and Anthropic providers issue, a
// SigV4 Authorization value (its credential scope and signature) or a
// bare signature, and a Google OAuth2 access token.
var bearerLike = regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/=-]{8,}|\bsk-[A-Za-z0-9_-]{16,}` +
	`|AWS4-HMAC-SHA256\s+Credential=[^\s"',]+(?:,\s*SignedHeaders=[^\s"',]+)?(?:,\s*Signature=[0-9a-f]+)?` +
	`|\bSignature=[0-9a-f]{64}\b|\bya29\.[A-Za-z0-9._-]{16,}`)

var redacted = []byte("[redacted]")

// keyScrub blanks a set of secrets out of what a provider sends back.
// It is made once for a set and never changed (but for grown, a
// cache): a set that grows is a new keyScrub (keyScrub.with).
type keyScrub struct {
	// secrets are the values the set was made from; keys, every form of
	// each (secretForms), the matcher's patterns.
	secrets []string
	keys    [][]byte
	// risky are the letters c of the JSON escapes \c that can stand for
	// a byte of a secret: u always, the others (/, n, ", ...) when a
	// secret holds the byte they stand for. An event whose escapes are
	// all others reads the same escaped as not.
	risky string
	// longest and shortest are the longest and the shortest key's
	// lengths.
	longest, shortest int
	// first holds, as a bitset, the bytes a key begins with; keys are
	// in the order of their first bytes, those that begin with c being
	// keys[at[c]:at[c+1]] (bucket).
	first [4]uint64
	at    [257]uint16
	// grown is the last set made from this one by a report (with), kept
	// so that the next report of the same secrets (the same access
	// token, request after request) makes nothing.
	grown atomic.Pointer[keyScrub]
}

// shortEscapes are JSON's two-byte escapes and the bytes they stand for.
const shortEscapes = "\"\"\\\\//b\bf\fn\nr\rt\t"

// minSecret is the shortest secret scrubbed: shorter ones (or empty, for
// a keyless provider) are too easy to mistake for ordinary text, and
// blanking them would mangle it.
const minSecret = 8

// newKeyScrub scrubs the given secrets, in every form (secretForms);
// those under minSecret bytes are left out.
func newKeyScrub(secrets ...string) *keyScrub {
	return extend(&keyScrub{}, secrets)
}

// extend is base with secrets added: a new keyScrub, base's keys
// shared, the new forms in one array.
func extend(base *keyScrub, secrets []string) *keyScrub {
	k := &keyScrub{longest: base.longest, first: base.first}
	k.secrets = append(make([]string, 0, len(base.secrets)+len(secrets)), base.secrets...)
	var buf []byte
	var ends []int
	for _, s := range secrets {
		if len(s) < minSecret || slices.Contains(k.secrets, s) {
			continue
		}
		k.secrets = append(k.secrets, s)
		buf, ends = appendForms(buf, ends, s)
	}
	k.keys = append(make([][]byte, 0, len(base.keys)+len(ends)), base.keys...)
	for i, start := range ends {
		if i%2 == 1 {
			continue
		}
		f := buf[start:ends[i+1]:ends[i+1]]
		if len(f) < minSecret || slices.ContainsFunc(k.keys, func(key []byte) bool { return bytes.Equal(key, f) }) {
			continue
		}
		k.keys = append(k.keys, f)
		k.longest = max(k.longest, len(f))
		k.first[f[0]>>6] |= 1 << (f[0] & 63)
	}
	slices.SortStableFunc(k.keys, func(a, b []byte) int { return cmp.Compare(a[0], b[0]) })
	for _, key := range k.keys {
		if k.shortest == 0 || len(key) < k.shortest {
			k.shortest = len(key)
		}
		k.at[int(key[0])+1]++
	}
	for c := 1; c <= 256; c++ {
		k.at[c] += k.at[c-1]
	}
	// base's escapes, and those of the bytes the new forms hold.
	k.risky = cmp.Or(base.risky, "u")
	for i := 0; i < len(shortEscapes); i += 2 {
		if strings.IndexByte(k.risky, shortEscapes[i]) < 0 && bytes.IndexByte(buf, shortEscapes[i+1]) >= 0 {
			k.risky += shortEscapes[i : i+1]
		}
	}
	return k
}

// text removes the secrets and bearer-shaped tokens from b.
func (k *keyScrub) text(b []byte) []byte {
	if s, e := k.next(b, 0); s >= 0 {
		out := make([]byte, 0, len(b))
		last := 0
		for s >= 0 {
			ns, ne := k.joined(b, s, &e)
			out = append(append(out, b[last:s]...), redacted...)
			last, s, e = e, ns, ne
		}
		b = append(out, b[last:]...)
	}
	return k.cutShort(bearerLike.ReplaceAll(b, redacted))
}

// cutShort redacts what is left of a secret cut short where a JSON
// string, or b, ends: a message bounded before it reached the gateway
// (a codec keeps 2 KiB of a vendor's words) can end inside one, and
// what is left is most of it. A start of minSecret bytes or more counts,
// as it is written (the codecs write no escapes in it).
func (k *keyScrub) cutShort(b []byte) []byte {
	if len(k.keys) == 0 {
		return b
	}
	var ends []int
	for i := bytes.IndexByte(b, '"'); i >= 0; {
		if !escapedBackslash(b, i) {
			ends = append(ends, i)
		}
		j := bytes.IndexByte(b[i+1:], '"')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	ends = append(ends, len(b))
	for i := len(ends) - 1; i >= 0; i-- {
		if e := ends[i]; e >= minSecret {
			if n := k.cutAt(b[:e]); n > 0 {
				b = slices.Replace(b, e-n, e, redacted...)
			}
		}
	}
	return b
}

// cutAt is how many bytes at the end of t are the start of a secret,
// minSecret of them at least and not the whole of it; 0 if none are.
func (k *keyScrub) cutAt(t []byte) int {
	n := 0
	for _, key := range k.keys {
		hi := len(t) - max(minSecret, n+1) // where a longer start would begin, at the latest
		for j := max(0, len(t)-len(key)+1); j <= hi; j++ {
			i := bytes.IndexByte(t[j:hi+1], key[0])
			if i < 0 {
				break
			}
			j += i
			if bytes.HasPrefix(key, t[j:]) {
				n = len(t) - j
				break
			}
		}
	}
	return n
}

// scrub blanks every whole occurrence of a secret in p, in place, with
// asterisks: each byte that spells it, an escape's bytes included, so a
// Content-Length stays true (and a client decoding an escaped secret
// reads more asterisks than it has characters).
func (k *keyScrub) scrub(p []byte) {
	if len(k.keys) == 0 {
		return
	}
	s, e := k.next(p, 0)
	for s >= 0 {
		ns, ne := k.joined(p, s, &e)
		for i := s; i < e; i++ {
			p[i] = '*'
		}
		s, e = ns, ne
	}
}

// joined extends the occurrence of a secret at b[s:*e] over every one
// that begins inside it (two secrets that overlap), and returns the next
// occurrence after it, both found in b as it was.
func (k *keyScrub) joined(b []byte, s int, e *int) (int, int) {
	ns, ne := k.next(b, s+1)
	for ns >= 0 && ns < *e {
		*e = max(*e, ne)
		ns, ne = k.next(b, ns+1)
	}
	return ns, ne
}

// next is where the first secret at or after b[from] is, written
// plainly or with JSON escapes: b[s:e], or -1s.
func (k *keyScrub) next(b []byte, from int) (s, e int) {
	s, e = -1, -1
	if from >= len(b) {
		return
	}
	if bytes.IndexByte(b[from:], '\\') < 0 {
		return k.nextPlain(b, from)
	}
	for i := from; i < len(b); i++ {
		c := b[i]
		if c != '\\' && !k.begins(c) {
			continue
		}
		keys := k.keys // an escape can spell any first byte
		if c != '\\' {
			keys = k.bucket(c)
		}
		for _, key := range keys {
			if end, _ := follow(b, i, key); end > e || end >= 0 && s < 0 {
				s, e = i, end
			}
		}
		if s >= 0 && !escapedAt(b, s) {
			return
		}
		if s >= 0 {
			// A key written plainly counts wherever it lies, even as
			// the letters of an escape (`\sk-...`, which no JSON
			// reader accepts but a log or a terminal shows): it is
			// blanked from the escape's backslash, so what is left
			// reads as JSON did.
			for _, key := range k.bucket(c) {
				if bytes.HasPrefix(b[i:], key) {
					return max(from, escapeStart(b, i)), max(e, i+len(key))
				}
			}
		}
		s, e = -1, -1
	}
	return
}

// escapeStart is where the JSON escape that b[i] is inside of begins
// (its backslash), or i if b[i] is in none (escapedAt).
func escapeStart(b []byte, i int) int {
	if i > 0 && b[i-1] == '\\' && !escapedBackslash(b, i-1) {
		return i - 1
	}
	for d := 2; d <= 5 && i-d >= 0; d++ {
		j := i - d
		if b[j] == '\\' && b[j+1] == 'u' && !escapedBackslash(b, j) {
			return j
		}
	}
	return i
}

// nextPlain is where the first key at or after b[from] is, byte for
// byte (the longest of those that begin there): b[s:e], or -1s. A few
// keys are searched for one by one, many in one pass over b.
func (k *keyScrub) nextPlain(b []byte, from int) (s, e int) {
	s, e = -1, -1
	if from > len(b) || len(b)-from < k.shortest {
		return
	}
	if len(k.keys) <= 4 {
		for _, key := range k.keys {
			if i := bytes.Index(b[from:], key); i >= 0 && (s < 0 || from+i < s || from+i == s && from+i+len(key) > e) {
				s, e = from+i, from+i+len(key)
			}
		}
		return
	}
	for i := from; i+k.shortest <= len(b); i++ {
		if !k.begins(b[i]) {
			continue
		}
		for _, key := range k.bucket(b[i]) {
			if i+len(key) > e && bytes.HasPrefix(b[i:], key) {
				s, e = i, i+len(key)
			}
		}
		if s >= 0 {
			return
		}
	}
	return
}

// begins reports whether a key begins with c.
func (k *keyScrub) begins(c byte) bool { return k.first[c>>6]&(1<<(c&63)) != 0 }

// bucket is the keys that begin with c.
func (k *keyScrub) bucket(c byte) [][]byte { return k.keys[k.at[c]:k.at[int(c)+1]] }

// partial is how many bytes at the end of p could be the start of a
// secret, plainly or with JSON escapes (an escape cut short included):
// a relay holds them back until the next read shows whether they are.
// A whole secret that ends among them is not held: its bytes go on,
// blanked, with what comes before.
func (k *keyScrub) partial(p []byte) int {
	if len(k.keys) == 0 || len(p) == 0 {
		return 0
	}
	// Six bytes (\u0063) is the most a byte of a secret takes.
	lo := max(0, len(p)-6*k.longest)
	for s, e := k.next(p, max(0, lo-6*k.longest)); s >= 0; s, e = k.next(p, s+1) {
		lo = max(lo, e)
	}
	for i := lo; i < len(p); i++ {
		c := p[i]
		if c != '\\' && !k.begins(c) {
			continue
		}
		escaped := escapedAt(p, i)
		keys := k.keys
		if c != '\\' {
			keys = k.bucket(c)
		}
		for _, key := range keys {
			if escaped {
				// Only a plain start counts here (next): held from
				// its escape's backslash.
				if n := len(p) - i; n < len(key) && bytes.HasPrefix(key, p[i:]) {
					return len(p) - escapeStart(p, i)
				}
				continue
			}
			if _, cut := follow(p, i, key); cut {
				return len(p) - i
			}
		}
	}
	return 0
}

// follow reads key in b from b[i], each of its bytes plain or in a JSON
// escape: end is where key ends in b, or -1 when b does not spell it
// there; cut, whether b ended first, having spelt the start of key
// (an escape cut short counts as one that might).
func follow(b []byte, i int, key []byte) (end int, cut bool) {
	var buf [4]byte
	for m := 0; m < len(key); {
		if i >= len(b) {
			return -1, true
		}
		if c := b[i]; c != '\\' {
			if c != key[m] {
				return -1, false
			}
			m, i = m+1, i+1
			continue
		}
		d, n := unescape(buf[:0], b, i, false)
		switch {
		case n < 0:
			return -1, true
		case n == 0:
			return -1, false
		}
		l := min(len(d), len(key)-m)
		if !bytes.Equal(d[:l], key[m:m+l]) {
			return -1, false
		}
		m, i = m+l, i+n
	}
	return i, false
}

// escapedAt reports whether b[i] is inside a JSON escape, not its
// backslash: the byte after an unescaped backslash, or one of the four
// hex digits of \uXXXX. Bytes before b are not known, so what begins a
// part of a body is taken as it reads.
func escapedAt(b []byte, i int) bool {
	if i > 0 && b[i-1] == '\\' && !escapedBackslash(b, i-1) {
		return true
	}
	for d := 2; d <= 5 && i-d >= 0; d++ {
		j := i - d
		if b[j] == '\\' && b[j+1] == 'u' && !escapedBackslash(b, j) {
			return true
		}
	}
	return false
}

// escapedBackslash reports whether the backslash at b[j] is itself
// escaped: an odd run of backslashes comes before it.
func escapedBackslash(b []byte, j int) bool {
	n := 0
	for j-1-n >= 0 && b[j-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// unescape appends the bytes the JSON string character at s[i] stands
// for to dst, and says how many bytes of s it took: 0 for a malformed
// escape, -1 for one that s ends inside of. final says that s ends where
// the string does, so an escaped high surrogate at its end stands alone
// (U+FFFD, as a lone low one does).
func unescape(dst, s []byte, i int, final bool) ([]byte, int) {
	if s[i] != '\\' {
		return append(dst, s[i]), 1
	}
	if i+1 >= len(s) {
		return dst, -1
	}
	c := s[i+1]
	if c != 'u' {
		for j := 0; j < len(shortEscapes); j += 2 {
			if shortEscapes[j] == c {
				return append(dst, shortEscapes[j+1]), 2
			}
		}
		return dst, 0
	}
	r, ok, short := hexRune(s, i+2)
	switch {
	case short:
		return dst, -1
	case !ok:
		return dst, 0
	case utf16.IsSurrogate(r) && r < 0xdc00:
		// A high surrogate: with the low one after it, one character.
		if !final && len(s) < i+12 {
			return dst, -1
		}
		if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
			if r2, ok, _ := hexRune(s, i+8); ok {
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					return utf8.AppendRune(dst, d), 12
				}
			}
		}
		return utf8.AppendRune(dst, utf8.RuneError), 6
	}
	return utf8.AppendRune(dst, r), 6
}

// hexRune reads four hex digits at s[i].
func hexRune(s []byte, i int) (r rune, ok, short bool) {
	for j := i; j < i+4; j++ {
		if j >= len(s) {
			return 0, false, true
		}
		c := s[j]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			c = (c | 0x20) - 'a' + 10
		default:
			return 0, false, false
		}
		r = r<<4 | rune(c)
	}
	return r, true, false
}

// headers redacts the secrets and bearer-shaped tokens from every value
// of h. A cheap look for the tell-tale substrings comes first: headers
// are on every response, and almost never hold either.
func (k *keyScrub) headers(h http.Header) {
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

func (k *keyScrub) mayHold(v string) bool {
	if strings.Contains(v, "sk-") || strings.Contains(v, "Signature=") || strings.Contains(v, "ya29.") || strings.Contains(v, "AWS4-") {
		return true
	}
	for _, key := range k.keys {
		for i := 0; i+len(key) <= len(v); i++ {
			j := strings.IndexByte(v[i:len(v)-len(key)+1], key[0])
			if j < 0 {
				break
			}
			if i += j; v[i:i+len(key)] == string(key) {
				return true
			}
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
func (k *keyScrub) logSafe(v string) string {
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
