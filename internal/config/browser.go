package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// A browser is a client too: any web page the operator opens can send
// requests to a gateway on loopback, and a page whose name the attacker
// points at 127.0.0.1 (DNS rebinding) can read the answers. The client
// listener therefore refuses requests from other origins unless CORS
// names them (server.cors), and both listeners, when they listen on
// loopback, answer only to the names of this machine and to
// server.allowed_hosts (gateway/browser.go).

// CORS lets web pages from the named origins call the client API from a
// browser: their preflight (OPTIONS) requests are answered, and their
// requests carry Access-Control-Allow-Origin. Without it, a request
// whose Origin header names another site is refused with 403.
type CORS struct {
	// AllowedOrigins are origins as a browser sends them,
	// scheme://host[:port] (https://app.example.com), or "*" for every
	// origin (only for a gateway whose keys are required and secret:
	// every web page a user opens may then call it with what it holds).
	AllowedOrigins []string `yaml:"allowed_origins"`
	// MaxAge is how long a browser may cache a preflight's answer
	// (default 10m).
	MaxAge Duration `yaml:"max_age"`
}

// DefaultCORSMaxAge is how long a browser caches a preflight's answer.
const DefaultCORSMaxAge = 10 * time.Minute

// On reports whether any origin is allowed.
func (c CORS) On() bool { return len(c.AllowedOrigins) > 0 }

// Allows reports whether a request with the Origin header origin is
// allowed by the list.
func (c CORS) Allows(origin string) bool {
	for _, o := range c.AllowedOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

// DefaultAdminMaxConnections caps the admin listener's open connections:
// enough for Prometheus, probes and a few dashboards, and few enough that
// idle admin connections cannot take the file descriptors the client
// listener needs.
const DefaultAdminMaxConnections = 64

// AdminTokenMinLength is the length below which an admin token is
// warned about at start: a short token can be guessed.
const AdminTokenMinLength = 16

func (c *Config) validateBrowser(v *checker) {
	for i, h := range c.Server.AllowedHosts {
		path := fmt.Sprintf("server.allowed_hosts[%d]", i)
		switch {
		case h == "":
			v.add(path, "is empty; write a host name such as gateway.internal")
		case strings.Contains(h, "://") || strings.ContainsAny(h, "/ "):
			v.add(path, "%s is not a host name; write the name alone, without scheme, port or path (e.g. gateway.internal)", short(h))
		case strings.Contains(h, ":") && net.ParseIP(strings.Trim(h, "[]")) == nil:
			v.add(path, "%s has a port; write the name alone (e.g. gateway.internal): every port is allowed", short(h))
		}
	}
	for i, o := range c.Server.CORS.AllowedOrigins {
		if o == "*" {
			continue
		}
		path := fmt.Sprintf("server.cors.allowed_origins[%d]", i)
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			v.add(path, "%s is not an origin; write scheme://host[:port] as the browser sends it (e.g. https://app.example.com), or \"*\" for every origin", short(o))
		} else if u.Path == "/" {
			v.add(path, "%s ends in /, which a browser's Origin header never does; write %s", short(o), strings.TrimSuffix(o, "/"))
		}
	}
	if c.Server.CORS.MaxAge < 0 {
		v.add("server.cors.max_age", "must not be negative; write e.g. 10m, or remove it for the default")
	}
	if c.Admin.MaxConnections < 0 {
		v.add("admin.max_connections", "must not be negative; write e.g. %d, or remove it for the default", DefaultAdminMaxConnections)
	}
}

// adminTokenWarning warns of an admin token short enough to guess.
func (c *Config) adminTokenWarning() string {
	if t := c.AdminToken(); t != "" && len(t) < AdminTokenMinLength {
		return fmt.Sprintf("WEAK ADMIN TOKEN: %s holds %d characters, which can be guessed; anyone who guesses it reads the metrics and the dashboard; export a long random one (e.g. openssl rand -hex 32, 64 characters), at least %d",
			c.Admin.TokenEnv, len(t), AdminTokenMinLength)
	}
	return ""
}

// Connections is the admin listener's connection cap: MaxConnections, or
// its default when unset.
func (a Admin) Connections() int {
	if a.MaxConnections <= 0 {
		return DefaultAdminMaxConnections
	}
	return a.MaxConnections
}

// Age is how long a browser may cache a preflight's answer: MaxAge, or
// its default when unset.
func (c CORS) Age() time.Duration {
	if c.MaxAge <= 0 {
		return DefaultCORSMaxAge
	}
	return c.MaxAge.D()
}
