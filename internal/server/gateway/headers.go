package gateway

import (
	"net/http"

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

// What a client hears of a provider's response headers is an
// allow-list too: the body's type and encoding, the provider's request
// id (support asks for it), and the rate-limit and timing headers the
// OpenAI and Anthropic SDKs read. Everything else stops here: CORS
// headers (a provider's Access-Control-Allow-Origin: * would open the
// gateway to every web page), Idempotent-Replayed and cache headers (the
// provider's account's state, not the gateway's), cookies, the account's
// identity (OpenAI-Organization, Anthropic-Organization-Id), server and
// CDN fingerprints, and connection framing.

// relayedHeaders are the provider response headers passed on, by
// canonical name.
var relayedHeaders = map[string]bool{
	"Content-Type":     true,
	"Content-Encoding": true,
	// Request ids: OpenAI, Anthropic, Azure OpenAI.
	"X-Request-Id":    true,
	"Request-Id":      true,
	"Apim-Request-Id": true,
	// Timing and retry advice the SDKs read (Retry-After is the
	// gateway's own: see below).
	"Openai-Processing-Ms": true,
	"Openai-Version":       true,
	"X-Should-Retry":       true,
}

// relayed reports whether a provider's response header named k
// (canonical) is passed on: relayedHeaders, or a rate-limit header.
func relayed(k string) bool { return relayedHeaders[k] || isRateLimitHeader(k) }

// copyResponseHeaders copies the provider's response headers that are
// relayed (relayedHeaders, the rate-limit headers), less anything in
// Sluice's own X-Sluice- namespace (a provider cannot say an answer was
// degraded, or which provider served it), with its secrets and anything
// bearer-shaped redacted. Retry-After is never copied as sent: a
// refusal's is set from the bounded value.
func copyResponseHeaders(dst, src http.Header, scrub *keyScrub) {
	// A key's own rate-limit headers, when Sluice set them, stand: the
	// provider's describe the gateway's account, not the client's.
	ours := false
	for k := range dst {
		ours = ours || isRateLimitHeader(k)
	}
	for k, vv := range src {
		if !relayed(k) || ours && isRateLimitHeader(k) || sluiceHeader(k) {
			continue
		}
		dst[k] = vv
	}
	scrub.headers(dst)
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
func requestID(h http.Header, scrub *keyScrub) string {
	id := h.Get("X-Request-Id")
	if id == "" {
		id = h.Get("Request-Id")
	}
	return scrub.logSafe(id)
}
