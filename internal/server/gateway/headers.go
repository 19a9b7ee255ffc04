package gateway

import (
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// What a provider hears of a client is an allow-list, per API: the
// headers its API needs from the caller, plus any the operator names in
// providers[].forward_headers. Everything else stops here: the client's
// credentials (the provider's key replaces them), its identity
// (OpenAI-Organization, OpenAI-Project: sent beside the gateway's key
// they would move one client's calls into another account, or make the
// provider refuse the gateway's key for everyone), forwarding headers
// (X-Forwarded-For, Forwarded: a third party has no business with client
// addresses), cookies, SDK telemetry and hop-by-hop framing.

// apiHeaders are the client headers each API needs passed on.
var apiHeaders = map[protocol.Dialect][]string{
	protocol.OpenAI:    {"Accept", "Openai-Beta"},
	protocol.Anthropic: {"Accept", "Anthropic-Version", "Anthropic-Beta"},
}

// userAgent is what the gateway tells providers it is.
const userAgent = "sluice"

// forwardList is the canonical names of the client headers a provider of
// dialect d hears: its API's, then the operator's.
func forwardList(d protocol.Dialect, extra []string) []string {
	out := append([]string(nil), apiHeaders[d]...)
	for _, h := range extra {
		out = append(out, http.CanonicalHeaderKey(h))
	}
	return out
}

// copyRequestHeaders sets on dst the client headers in allow.
func copyRequestHeaders(dst, src http.Header, allow []string) {
	for _, k := range allow {
		if vv := src[k]; len(vv) > 0 {
			dst[k] = vv
		}
	}
}

// hopHeaders are meaningful for one connection only (RFC 9110 §7.6.1) and
// never forwarded.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// copyResponseHeaders copies the provider's response headers, request ids
// and rate-limit headers included, less connection framing, cookies and
// anything in Sluice's own X-Sluice- namespace (a provider cannot say an
// answer was degraded, or which provider served it),
// with its secrets and anything bearer-shaped redacted. Retry-After is
// never copied as sent: a refusal's is set from the bounded value.
func copyResponseHeaders(dst, src http.Header, scrub keyScrub) {
	// A key's own rate-limit headers, when Sluice set them, stand: the
	// provider's describe the gateway's account, not the client's.
	ours := false
	for k := range dst {
		ours = ours || isRateLimitHeader(k)
	}
	for k, vv := range src {
		if ours && isRateLimitHeader(k) || sluiceHeader(k) {
			continue
		}
		dst[k] = vv
	}
	removeHopHeaders(dst)
	for _, k := range []string{"Content-Length", "Set-Cookie", "Retry-After", "Retry-After-Ms"} {
		dst.Del(k)
	}
	scrub.headers(dst)
}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// countFields is the number of header fields in h.
func countFields(h http.Header) int {
	n := 0
	for _, vv := range h {
		n += len(vv)
	}
	return n
}

// requestID picks the provider's request id from a response, for the
// log, made safe to log.
func requestID(h http.Header, scrub keyScrub) string {
	id := h.Get("X-Request-Id")
	if id == "" {
		id = h.Get("Request-Id")
	}
	return scrub.logSafe(id)
}
