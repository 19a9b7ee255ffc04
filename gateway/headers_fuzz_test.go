package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/protocol"
)

// Whatever headers a client sends, a provider hears only those on the
// allow-list; and whatever a provider sends back, no header value that
// reaches the client carries the key or anything bearer-shaped.
func FuzzHeaderFilter(f *testing.F) {
	const key = "sk-provider-secret-0123456789"
	f.Add("OpenAI-Organization", "org-1", "X-Debug", "Bearer "+key)
	f.Add("X-Forwarded-For", "10.0.0.1", "Set-Cookie", "a=b")
	f.Add("anthropic-beta", "tools", "Www-Authenticate", "Bearer realm=x, token=sk-abcdefghijklmnopqrstu")
	f.Add("Authorization", "Bearer client", "X-Key", key[:10]+" "+key[10:])
	f.Fuzz(func(t *testing.T, reqName, reqValue, respName, respValue string) {
		allow := forwardList(protocol.Anthropic, []string{"X-Trace-Id"})
		src := http.Header{}
		src[http.CanonicalHeaderKey(reqName)] = []string{reqValue}
		dst := http.Header{}
		copyRequestHeaders(dst, src, allow)
		for k := range dst {
			ok := false
			for _, a := range allow {
				ok = ok || a == k
			}
			if !ok {
				t.Fatalf("%q reached the provider; allowed: %v", k, allow)
			}
		}
		from := http.Header{}
		from[http.CanonicalHeaderKey(respName)] = []string{respValue}
		to := http.Header{}
		copyResponseHeaders(to, from, newKeyScrub(key))
		for k, vv := range to {
			for _, v := range vv {
				if strings.Contains(v, key) || bearerLike.MatchString(v) {
					t.Fatalf("%s: %q reached the client", k, v)
				}
			}
			if k == "Set-Cookie" || k == "Connection" || k == "Content-Length" || k == "Retry-After" {
				t.Fatalf("%s reached the client", k)
			}
		}
	})
}

// A provider's body, scrubbed in chunks cut anywhere, never carries the
// key whole, and keeps its length.
func FuzzKeyScrub(f *testing.F) {
	const key = "sk-provider-secret-0123456789"
	f.Add([]byte("data: {\"x\":\""+key+"\"}\n\n"), uint16(20))
	f.Add([]byte(key+key), uint16(29))
	f.Fuzz(func(t *testing.T, body []byte, cut uint16) {
		k := newKeyScrub(key)
		c := min(int(cut), len(body))
		// The relay's way: hold back a possible start of the key.
		first := append([]byte(nil), body[:c]...)
		hold := k.partial(first)
		out := append([]byte(nil), first[:len(first)-hold]...)
		k.scrub(out)
		rest := append(append([]byte(nil), first[len(first)-hold:]...), body[c:]...)
		k.scrub(rest)
		out = append(out, rest...)
		if len(out) != len(body) {
			t.Fatalf("scrubbing changed the length: %d -> %d", len(body), len(out))
		}
		if strings.Contains(string(out), key) {
			t.Fatalf("the key survived: %q", out)
		}
	})
}
