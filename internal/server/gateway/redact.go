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
