package config

import (
	"strings"
	"testing"
	"time"
)

// A one-character admin token was accepted without a word. A token
// shorter than AdminTokenMinLength is warned about at start (and by serve
// --check), loudly, naming its variable and how to make a good one; the
// token itself is never printed.
func TestShortAdminTokenWarns(t *testing.T) {
	base := "providers: [{name: p, kind: openai, base_url: 'http://127.0.0.1:1/v1'}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\nadmin: {token_env: SLUICE_T_WEAK}\n"
	c, err := Parse([]byte(base), "admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	weak := func() string {
		for _, w := range c.Warnings() {
			if strings.Contains(w, "WEAK ADMIN TOKEN") {
				return w
			}
		}
		return ""
	}
	t.Setenv("SLUICE_T_WEAK", "Q")
	if w := weak(); !strings.Contains(w, "SLUICE_T_WEAK holds 1 characters") || !strings.Contains(w, "openssl rand") || strings.Contains(w, "Q ") {
		t.Errorf("a one-character token: warning %q", w)
	}
	t.Setenv("SLUICE_T_WEAK", strings.Repeat("k", AdminTokenMinLength))
	if w := weak(); w != "" {
		t.Errorf("a %d-character token is warned about: %q", AdminTokenMinLength, w)
	}
}

// server.allowed_hosts, server.cors and admin.max_connections are
// validated when loaded, each error saying what to write.
func TestBrowserSettingsValidated(t *testing.T) {
	base := "providers: [{name: p, kind: openai, base_url: 'http://127.0.0.1:1/v1'}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"names and origins", "server: {allowed_hosts: [gw.internal, '::1'], cors: {allowed_origins: ['https://app.example', 'http://localhost:3000', '*'], max_age: 1m}}\nadmin: {max_connections: 8}\n", ""},
		{"a host with a scheme", "server: {allowed_hosts: ['http://gw.internal']}\n", "server.allowed_hosts[0]: \"http://gw.internal\" is not a host name"},
		{"a host with a port", "server: {allowed_hosts: ['gw.internal:8080']}\n", "has a port"},
		{"an origin with a path", "server: {cors: {allowed_origins: ['https://app.example/chat']}}\n", "server.cors.allowed_origins[0]: \"https://app.example/chat\" is not an origin"},
		{"an origin with a slash", "server: {cors: {allowed_origins: ['https://app.example/']}}\n", "write https://app.example"},
		{"a bare name", "server: {cors: {allowed_origins: ['app.example']}}\n", "scheme://host[:port]"},
		{"a negative cap", "admin: {max_connections: -1}\n", "admin.max_connections"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(base+c.yaml), "browser.yaml")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("want an error mentioning %q, got %v", c.want, err)
			case c.want == "":
				if cfg.Admin.Connections() != 8 || cfg.Server.CORS.Age() != time.Minute || !cfg.Server.CORS.Allows("https://anything.example") {
					t.Errorf("read back: %d connections, max age %v", cfg.Admin.Connections(), cfg.Server.CORS.Age())
				}
			}
		})
	}
	if (Admin{}).Connections() != DefaultAdminMaxConnections || (CORS{}).Age() != DefaultCORSMaxAge || (CORS{}).On() {
		t.Error("defaults")
	}
}

// server.trusted_proxies takes IPs and CIDR prefixes; anything else is
// an error that says what to write.
func TestTrustedProxies(t *testing.T) {
	base := "providers: [{name: p, kind: openai, base_url: 'http://127.0.0.1:1/v1'}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n"
	c, err := Parse([]byte(base+"server: {trusted_proxies: [10.0.0.0/8, 192.0.2.7, '::ffff:198.51.100.1', 'fd00::/8']}\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range c.Server.Proxies() {
		got = append(got, p.String())
	}
	if want := "10.0.0.0/8 192.0.2.7/32 198.51.100.1/32 fd00::/8"; strings.Join(got, " ") != want {
		t.Errorf("Proxies() = %v, want %s", got, want)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.internal", "10.0.0.1:80", ""} {
		_, err := Parse([]byte(base+"server: {trusted_proxies: ['"+bad+"']}\n"), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), "server.trusted_proxies[0]") || !strings.Contains(err.Error(), "CIDR") {
			t.Errorf("trusted_proxies [%q]: %v; want an error naming the entry and what to write", bad, err)
		}
	}
}
