package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluice-gw/sluice/internal/wire/native"
)

// What the scrubber knows (redact.go): the secrets a request's calls
// were made with, and the forms each can take in a body.

// credentials is the set of secrets one request's upstream calls were
// made with (or one call's of the gateway's own, an eval's): the static
// secrets of every provider called (joined as each call is made) and
// what signers reported as they signed (native.CredentialSink). Every
// scrubber of the request's bytes reads it (scrubber), when it scrubs:
// the set only grows, so a scrub that reads it after a call was made
// knows that call's secrets. Its zero value holds none.
//
// A request whose calls all go to one provider with static secrets
// shares that provider's keyScrub, made once at load: joining it costs
// nothing. A set that grows (a signer's token, a second provider) is a
// new keyScrub, made once per change.
type credentials struct {
	mu  sync.Mutex // orders the writers; readers load cur
	cur atomic.Pointer[keyScrub]
}

// noSecrets is the empty set's scrubber.
var noSecrets = newKeyScrub()

// scrubber is the set as it is now (none, for a nil c).
func (c *credentials) scrubber() *keyScrub {
	if c == nil {
		return noSecrets
	}
	if k := c.cur.Load(); k != nil {
		return k
	}
	return noSecrets
}

// calling joins p's static secrets to the set before a call to p is
// made, and returns the context to make it in: ctx, or for a native
// provider ctx with the set as the sink its signer reports to.
func (c *credentials) calling(ctx context.Context, p *provider) context.Context {
	c.join(p.scrub)
	if p.native != nil {
		ctx = native.WithCredentialSink(ctx, c)
	}
	return ctx
}

// join adds k's secrets to the set.
func (c *credentials) join(k *keyScrub) {
	if cur := c.cur.Load(); cur == k || cur != nil && len(k.secrets) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch cur := c.cur.Load(); {
	case cur == nil:
		c.cur.Store(k)
	case cur != k:
		c.cur.Store(cur.with(k.secrets...))
	}
}

// Credentials adds what a signer reports it signed a call with.
func (c *credentials) Credentials(values ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.scrubber()
	if n := cur.with(values...); n != cur {
		c.cur.Store(n)
	}
}

var _ native.CredentialSink = (*credentials)(nil)

// with is k with values added: k itself when it has them all (or they
// are too short to scrub), else a set made once for them (k.grown, when
// it has them all and k's), or a new one.
func (k *keyScrub) with(values ...string) *keyScrub {
	if !k.lacks(values) {
		return k
	}
	if g := k.grown.Load(); g != nil && !g.lacks(values) {
		return g
	}
	n := extend(k, values)
	k.grown.Store(n)
	return n
}

// lacks reports whether one of values, long enough to scrub, is not in k.
func (k *keyScrub) lacks(values []string) bool {
	for _, v := range values {
		if len(v) >= minSecret && !slices.Contains(k.secrets, v) {
			return true
		}
	}
	return false
}

// secretForms are the forms secret s can take in what a provider sends
// back, beyond JSON's escapes, which the matcher reads (keyScrub.next):
// s itself; percent-encoded, as in a URL's query; and base64, in the
// standard and the URL alphabet, at each of the three alignments s can
// have in a longer text that is encoded whole (an Authorization header,
// a request dumped for debugging). Of each alignment only the
// characters that depend on s alone are a form: whatever text
// surrounds s, its encoding holds one of the three.
func secretForms(s string) []string {
	buf, ends := appendForms(nil, nil, s)
	var forms []string
	for i := 0; i < len(ends); i += 2 {
		forms = append(forms, string(buf[ends[i]:ends[i+1]]))
	}
	return forms
}

// appendForms appends the forms of s (secretForms) to buf, and where
// each starts and ends to ends.
func appendForms(buf []byte, ends []int, s string) ([]byte, []int) {
	form := func(start int) {
		ends = append(ends, start, len(buf))
	}
	start := len(buf)
	buf = append(buf, s...)
	form(start)
	start = len(buf)
	if buf = appendQueryEscape(buf, s); string(buf[start:]) != s {
		form(start)
	} else {
		buf = buf[:start]
	}
	in := make([]byte, 2+len(s))
	copy(in[2:], s)
	for o := range 3 {
		start = len(buf)
		buf = base64.RawStdEncoding.AppendEncode(buf, in[2-o:])
		// Character i holds bits [6i, 6i+6) of the o bytes before s and
		// s: those wholly within s.
		from, to := start+(8*o+5)/6, start+8*(o+len(s))/6
		buf = buf[:start+copy(buf[start:], buf[from:to])]
		form(start)
		if bytes.ContainsAny(buf[start:], "+/") {
			u := len(buf)
			buf = append(buf, buf[start:u]...)
			for i := u; i < len(buf); i++ {
				switch buf[i] {
				case '+':
					buf[i] = '-'
				case '/':
					buf[i] = '_'
				}
			}
			form(u)
		}
	}
	return buf, ends
}

// appendQueryEscape appends s percent-encoded as url.QueryEscape writes
// it.
func appendQueryEscape(buf []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == '~':
			buf = append(buf, c)
		case c == ' ':
			buf = append(buf, '+')
		default:
			buf = append(buf, '%', hex[c>>4], hex[c&15])
		}
	}
	return buf
}

// publicHeaders are the headers an operator may set on a provider's
// calls whose values are never secrets: an API's version and feature
// switches, and content negotiation.
var publicHeaders = []string{"Accept", "Content-Type", "User-Agent", "Anthropic-Version", "Anthropic-Beta", "Openai-Beta"}

// credentialWords are the words a header's name holds when its value is
// a credential (Authorization, X-Api-Key, X-Auth-Token, Cookie, ...).
var credentialWords = []string{"auth", "key", "token", "secret", "pass", "cookie", "signature", "credential", "session"}

// headerSecrets are the secrets a header the operator sets on a
// provider's calls carries: its value, and when that is a scheme and a
// credential ("Bearer X", "Basic X"), the credential, and a Basic
// credential's decoded form and password.
//
// A value is taken for a secret when its header's name says so (a
// credential word), when it is a scheme and a credential, or when it
// is shaped like one (credentialShaped), whatever the name. Any other
// value (X-Env: production, HTTP-Referer: https://app.example,
// X-Title: My App) is an operator's label, not a secret: blanking it
// would mangle every answer that says the word, for every client.
func headerSecrets(name, value string) []string {
	if slices.Contains(publicHeaders, http.CanonicalHeaderKey(name)) {
		return nil
	}
	lower := strings.ToLower(name)
	named := slices.ContainsFunc(credentialWords, func(w string) bool { return strings.Contains(lower, w) })
	scheme, cred, ok := strings.Cut(strings.TrimSpace(value), " ")
	cred = strings.TrimSpace(cred)
	schemed := ok && !strings.ContainsFunc(scheme, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') }) &&
		credentialShaped(cred)
	if !named && !schemed && !credentialShaped(value) {
		return nil
	}
	out := []string{value}
	if !ok || strings.ContainsFunc(scheme, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') }) {
		return out
	}
	out = append(out, cred)
	if strings.EqualFold(scheme, "Basic") {
		if b, err := base64.StdEncoding.DecodeString(cred); err == nil {
			out = append(out, string(b))
			if _, pass, ok := strings.Cut(string(b), ":"); ok {
				out = append(out, pass)
			}
		}
	}
	return out
}

// credentialShaped reports whether v looks like a credential rather
// than a word or a label: 16 bytes or more with no space, holding both
// letters and digits (an API key, a token, a hex or base64 secret).
func credentialShaped(v string) bool {
	if len(v) < 16 || strings.ContainsAny(v, " \t") {
		return false
	}
	return strings.ContainsAny(v, "0123456789") &&
		strings.ContainsFunc(v, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
}
