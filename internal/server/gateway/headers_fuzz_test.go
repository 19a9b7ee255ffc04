package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
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
	f.Add([]byte(`\`+key), uint16(0))
	f.Add([]byte(`"\`+key+`"`), uint16(3))
	f.Add([]byte(`\u00`+key), uint16(6))
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

// FuzzReasonText: a validation verdict's reason quotes the provider's
// answer and goes out in a header and a trailing event. Whatever the
// answer held, the reason is printable ASCII, bounded, and carries no
// part of the provider's key eight bytes long, even where the bound
// cuts through it.
func FuzzReasonText(f *testing.F) {
	const key = "3f9a2c7e41b84d0f9e6a5b1c2d3e4f50" // an Azure-style key: no sk- prefix
	f.Add("tool \"", "\" arguments are not JSON", uint16(0))
	f.Add("", "", uint16(290))
	f.Add("refused: \n\x00\xff", "Bearer abcdefghijkl", uint16(280))
	f.Fuzz(func(t *testing.T, before, after string, pad uint16) {
		p := &provider{scrub: newKeyScrub(key)}
		s := strings.Repeat("x", int(pad)%(2*maxReason)) + before + key + after
		got := reasonText(p.scrub, s)
		if len(got) > maxReason+len("...") {
			t.Fatalf("%d bytes", len(got))
		}
		for i := 0; i < len(got); i++ {
			if c := got[i]; c < 0x20 || c > 0x7e {
				t.Fatalf("byte %#x at %d in %q", c, i, got)
			}
		}
		for i := 0; i+8 <= len(key); i++ {
			if strings.Contains(got, key[i:i+8]) && !strings.Contains(before+after, key[i:i+8]) {
				t.Fatalf("%q of the key reached the reason: %q", key[i:i+8], got)
			}
		}
	})
}
