package gateway

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	for _, tc := range []struct {
		name, peer string
		xff        []string
		trusted    []netip.Prefix
		want       string
	}{
		{"no proxies: the peer, whatever the header says", "192.0.2.1:5000", []string{"203.0.113.9"}, nil, "192.0.2.1"},
		{"an untrusted peer's header is ignored", "192.0.2.1:5000", []string{"203.0.113.9"}, trusted, "192.0.2.1"},
		{"a trusted proxy: the address it saw", "10.1.2.3:5000", []string{"203.0.113.9"}, trusted, "203.0.113.9"},
		{"what the client wrote itself is skipped", "10.1.2.3:5000", []string{"198.51.100.1, 203.0.113.9"}, trusted, "203.0.113.9"},
		{"a chain of trusted proxies", "127.0.0.1:5000", []string{"198.51.100.1, 203.0.113.9, 10.9.9.9"}, trusted, "203.0.113.9"},
		{"several header lines read as one list", "10.1.2.3:5000", []string{"198.51.100.1", "203.0.113.9, 10.0.0.7"}, trusted, "203.0.113.9"},
		{"a malformed entry ends the walk at the last trusted hop", "10.1.2.3:5000", []string{"203.0.113.9, junk"}, trusted, "10.1.2.3"},
		{"no header: the proxy itself", "10.1.2.3:5000", nil, trusted, "10.1.2.3"},
		{"every hop trusted: the first", "10.1.2.3:5000", []string{"10.0.0.5, 10.0.0.6"}, trusted, "10.0.0.5"},
		{"IPv4-mapped IPv6 is its IPv4", "[::ffff:10.1.2.3]:5000", []string{"::ffff:203.0.113.9"}, trusted, "203.0.113.9"},
	} {
		r := &http.Request{RemoteAddr: tc.peer, Header: http.Header{}}
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		got, ok := clientAddr(r, tc.trusted)
		if !ok || got.String() != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := clientAddr(&http.Request{RemoteAddr: "@unix"}, trusted); ok {
		t.Error("a peer that is not an IP socket: ok, want not")
	}
}
