package gateway

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
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
// are too short to scrub), else a new keyScrub.
func (k *keyScrub) with(values ...string) *keyScrub {
	var add []string
	for _, v := range values {
		if len(v) >= minSecret && !slices.Contains(k.secrets, v) && !slices.Contains(add, v) {
			add = append(add, v)
		}
	}
	if len(add) == 0 {
		return k
	}
	return newKeyScrub(append(slices.Clip(k.secrets), add...)...)
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
	forms := []string{s}
	if q := url.QueryEscape(s); q != s {
		forms = append(forms, q)
	}
	buf := make([]byte, 2+len(s))
	copy(buf[2:], s)
	for o := range 3 {
		enc := base64.RawStdEncoding.EncodeToString(buf[2-o:])
		// Character i holds bits [6i, 6i+6) of the o bytes before s and
		// s: those wholly within s.
		core := enc[(8*o+5)/6 : 8*(o+len(s))/6]
		forms = append(forms, core)
		if u := urlAlphabet.Replace(core); u != core {
			forms = append(forms, u)
		}
	}
	return forms
}

var urlAlphabet = strings.NewReplacer("+", "-", "/", "_")

// publicHeaders are the headers an operator may set on a provider's
// calls whose values are not secrets: an API's version and feature
// switches, and content negotiation. Every other header's value is
// taken for one (headerSecrets), whatever its name.
var publicHeaders = []string{"Accept", "Content-Type", "User-Agent", "Anthropic-Version", "Anthropic-Beta", "Openai-Beta"}

// headerSecrets are the secrets a header the operator sets on a
// provider's calls carries: its value, and when that is a scheme and a
// credential ("Bearer X", "Basic X"), the credential, and a Basic
// credential's decoded form and password.
func headerSecrets(name, value string) []string {
	if slices.Contains(publicHeaders, http.CanonicalHeaderKey(name)) {
		return nil
	}
	out := []string{value}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(value), " ")
	if !ok || strings.ContainsFunc(scheme, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') }) {
		return out
	}
	cred = strings.TrimSpace(cred)
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
