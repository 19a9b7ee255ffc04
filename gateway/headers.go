package gateway

import (
	"net/http"
	"strings"
)

// hopHeaders are meaningful for one connection only (RFC 9110 §7.6.1) and
// never forwarded.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// clientOnly are request headers that stop at the gateway: the client's
// credentials (the provider's key replaces them), Sluice's own controls,
// and framing that the gateway recomputes.
var clientOnly = []string{
	"Authorization", "X-Api-Key", "Api-Key", "Cookie",
	"Content-Length", "Accept-Encoding", "Host",
}

// copyRequestHeaders copies what the provider should see of the client's
// headers.
func copyRequestHeaders(dst, src http.Header) {
	for k, vv := range src {
		if strings.HasPrefix(k, "X-Sluice-") {
			continue
		}
		dst[k] = vv
	}
	for _, k := range clientOnly {
		dst.Del(k)
	}
	removeHopHeaders(dst)
}

// copyResponseHeaders copies the provider's response headers, request ids
// and rate-limit headers included, less connection framing.
func copyResponseHeaders(dst, src http.Header) {
	for k, vv := range src {
		dst[k] = vv
	}
	removeHopHeaders(dst)
	dst.Del("Content-Length")
	dst.Del("Set-Cookie")
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

// requestID picks the provider's request id from a response, for the log.
func requestID(h http.Header) string {
	if id := h.Get("X-Request-Id"); id != "" {
		return id
	}
	return h.Get("Request-Id")
}
