package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// Proxies parses server.trusted_proxies: each an IP (a prefix of its
// full length) or a CIDR prefix. Validate has reported any that does
// not parse; they are left out here.
func (s Server) Proxies() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s.TrustedProxies {
		if pre, err := parseProxy(p); err == nil {
			out = append(out, pre)
		}
	}
	return out
}

func parseProxy(p string) (netip.Prefix, error) {
	if strings.Contains(p, "/") {
		pre, err := netip.ParsePrefix(p)
		return pre.Masked(), err
	}
	a, err := netip.ParseAddr(p)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (c *Config) validateProxies(v *checker) {
	for i, p := range c.Server.TrustedProxies {
		if _, err := parseProxy(p); err != nil {
			v.add(fmt.Sprintf("server.trusted_proxies[%d]", i), "%s is not an IP address or a CIDR prefix; write e.g. 10.0.0.0/8 or 192.0.2.7", short(p))
		}
	}
}
