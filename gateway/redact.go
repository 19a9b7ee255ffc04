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
//   - error bodies and response header values lose the provider's key and
//     anything bearer-shaped (redactText);
//   - success bodies, streamed or whole, lose the provider's key wherever
//     it appears, even split across reads (keyScrub). They are not
//     searched for other bearer-shaped text: a model's answer may quote
//     "Bearer abc123" in code it was asked to write.

// bearerLike matches credentials in text: a bearer token, or a key in the
// shapes OpenAI-style and Anthropic providers issue.
var bearerLike = regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/=-]{8,}|\bsk-[A-Za-z0-9_-]{16,}`)

var redacted = []byte("[redacted]")

// redactText removes key and bearer-shaped tokens from a provider's text.
func redactText(b []byte, key string) []byte {
	if key != "" && bytes.Contains(b, []byte(key)) {
		b = bytes.ReplaceAll(b, []byte(key), redacted)
	}
	return bearerLike.ReplaceAll(b, redacted)
}

// keyScrub blanks a provider's key out of a relayed body in place, with
// asterisks of the same length, so a Content-Length stays true.
type keyScrub struct{ key []byte }

func newKeyScrub(key string) keyScrub {
	if len(key) < 8 {
		return keyScrub{} // an empty key (keyless provider) scrubs nothing
	}
	return keyScrub{key: []byte(key)}
}

// scrub blanks every whole occurrence of the key in p.
func (k keyScrub) scrub(p []byte) {
	if k.key == nil {
		return
	}
	for i := 0; ; {
		j := bytes.Index(p[i:], k.key)
		if j < 0 {
			return
		}
		for n := range k.key {
			p[i+j+n] = '*'
		}
		i += j + len(k.key)
	}
}

// partial is how many bytes at the end of p could be the start of the key:
// a relay holds them back until the next read shows whether they are.
func (k keyScrub) partial(p []byte) int {
	if k.key == nil {
		return 0
	}
	for n := min(len(k.key)-1, len(p)); n > 0; n-- {
		if bytes.HasPrefix(k.key, p[len(p)-n:]) {
			return n
		}
	}
	return 0
}

// scrubHeaders redacts the key and bearer-shaped tokens from every value.
// A cheap look for the tell-tale substrings comes first: headers are on
// every response, and almost never hold either.
func scrubHeaders(h http.Header, key string) {
	for name, vv := range h {
		for i, v := range vv {
			if !mayHoldSecret(v, key) {
				continue
			}
			if r := redactText([]byte(v), key); !bytes.Equal(r, []byte(v)) {
				h[name] = append([]string(nil), vv...) // not the provider's slice
				h[name][i] = string(r)
				vv = h[name]
			}
		}
	}
}

func mayHoldSecret(v, key string) bool {
	if strings.Contains(v, "sk-") || (len(key) >= 8 && strings.Contains(v, key)) {
		return true
	}
	for i := 0; i+6 <= len(v); i++ {
		if v[i]|0x20 == 'b' && strings.EqualFold(v[i:i+6], "bearer") {
			return true
		}
	}
	return false
}
