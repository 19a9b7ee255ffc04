package config

import (
	"fmt"
	"net"
	"os"
)

// Admin guards the admin listener (admin_listen): /metrics, the dashboard
// and its data. /healthz and /readyz stay open whatever it says, so that
// load balancers and orchestrators can probe without a credential; they
// tell nothing but "ok" or "draining".
type Admin struct {
	// TokenEnv names the environment variable holding the admin bearer
	// token (default: none). With it, every admin request but the probes
	// needs "Authorization: Bearer TOKEN" (Prometheus: authorization
	// credentials), or the session cookie a browser gets by opening
	// /dashboard/?token=TOKEN once (a random session, not the token,
	// for 12 hours). The token is read at start: a reload does not
	// change it. serve refuses to start while the variable is unset or
	// empty.
	TokenEnv string `yaml:"token_env"`
	// Open (default false) serves the admin API without a token on an
	// address beyond loopback. Without a token, serve binds admin_listen
	// only on loopback (127.0.0.1, ::1, localhost) unless Open is set:
	// set it only where the network keeps the admin port private (a
	// container network that publishes only the client port).
	Open bool `yaml:"open"`
	// MaxConnections caps the admin listener's open connections (default
	// 64); past it new ones wait in the kernel's accept queue, so idle
	// admin connections cannot take the file descriptors the client
	// listener needs.
	MaxConnections int `yaml:"max_connections"`
}

// AdminToken reads the admin token from the environment on each call, so
// it never sits in a Config that might be printed; "" when none is set.
func (c *Config) AdminToken() string {
	if c.Admin.TokenEnv == "" {
		return ""
	}
	return os.Getenv(c.Admin.TokenEnv)
}

func (c *Config) validateAdmin(v *checker) {
	if c.Admin.TokenEnv != "" && !envName.MatchString(c.Admin.TokenEnv) {
		v.add("admin.token_env", "must be the name of an environment variable (upper-case letters, digits and _, not starting with a digit), not the token itself; write e.g. SLUICE_ADMIN_TOKEN")
	}
	if c.Admin.TokenEnv == "" && !c.Admin.Open && !Loopback(c.AdminListen) {
		v.add("admin_listen", "%s is reachable beyond this machine, and the admin API (metrics, dashboard) has no token; set admin.token_env: SLUICE_ADMIN_TOKEN and export a long random token in it, or listen on 127.0.0.1 (e.g. %s), or set admin.open: true if the network keeps this port private",
			short(c.AdminListen), DefaultAdminListen)
	}
}

// Loopback reports whether addr (host:port) listens only on a loopback
// interface: 127.0.0.0/8, ::1 or localhost. An empty host (all
// interfaces) is not.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkAdminEnv is CheckEnv's part for admin.token_env.
func (c *Config) checkAdminEnv() *Error {
	if c.Admin.TokenEnv == "" || os.Getenv(c.Admin.TokenEnv) != "" {
		return nil
	}
	const path = "admin.token_env"
	return &Error{File: c.src.fileName(), Line: c.src.line(path), Field: path,
		Msg: fmt.Sprintf("environment variable %s is not set (or is empty); export a long random token in it (e.g. openssl rand -hex 32), or remove admin.token_env", c.Admin.TokenEnv)}
}
