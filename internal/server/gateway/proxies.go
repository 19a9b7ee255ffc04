package gateway

import (
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address of the client that sent r. It is the
// socket's peer, unless that peer is one of trusted (a proxy in front
// of the gateway, server.trusted_proxies): then X-Forwarded-For is read
// from its end, each trusted proxy's entry skipped, and the first
// address no trusted proxy owns is the client, since every entry before
// it was written by a hop nobody vouches for. A malformed entry ends
// the walk at the last hop that was trusted, so a client cannot forge
// its way to another's share. ok is false for a peer that is not an IP
// socket.
func clientAddr(r *http.Request, trusted []netip.Prefix) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	client := ap.Addr().Unmap().WithZone("")
	if len(trusted) == 0 || !owned(client, trusted) {
		return client, true
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		entries := strings.Split(hops[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(entries[j]))
			if err != nil {
				return client, true
			}
			client = a.Unmap().WithZone("")
			if !owned(client, trusted) {
				return client, true
			}
		}
	}
	return client, true
}

// owned reports whether a is in one of prefixes.
func owned(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
