package gateway

import (
	"bytes"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Errors that name sockets. A failing provider, or a proxy in front of
// one, often says why in its own words: "dial tcp 10.0.3.7:8000:
// connect: connection refused", a resolver's "no such host". The client
// learns from that nothing it can act on, and whoever holds a key learns
// the provider's network. Sluice's own messages never name an address
// (they name providers and settings); an error body a provider sends
// with a 5xx status that names one, or carries a dial error verbatim, is
// answered with a generic upstream-unreachable message in the client's
// dialect instead, with the provider's status, and the body goes to the
// log only. The admin API's store errors (the key store, the usage
// store) are answered the same way.

// socketRE matches an IPv4 address (with or without its port), an IPv6
// address in brackets with its port, and the phrases of a network
// error as Go and the common runtimes spell them.
var socketRE = regexp.MustCompile(`(?i)\b(?:\d{1,3}\.){3}\d{1,3}\b|\[[0-9a-f:.%]+\]:\d{1,5}|\b(?:dial|read|write) (?:tcp|udp|unix)[46]?\b|connection refused|no such host|no route to host|network is unreachable|econnrefused|econnreset|getaddrinfo|connect: |i/o timeout`)

// namesSocket reports whether b names a socket address or carries a
// network error verbatim.
func namesSocket(b []byte) bool { return socketRE.Match(b) }

// unreachableBody is what a client gets in place of a provider's error
// body that named a socket (namesSocket): a generic message in its
// dialect, with the kind its status means. The body itself is logged.
func unreachableBody(log *slog.Logger, d protocol.Dialect, provider string, status int, body []byte) []byte {
	log.Warn("a provider's error names a network address or error; the client gets a generic message",
		"provider", provider, "status", status, "body", string(bytes.TrimSpace(body[:min(len(body), 2048)])))
	kind := protocol.Upstream
	if status == 503 || status == 529 {
		kind = protocol.Overloaded
	}
	return d.ErrorBody(kind, fmt.Sprintf("provider %s could not reach a service it depends on (it answered %d); the gateway's log has its detail", provider, status))
}
