package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// A browser is a client too. Any web page the operator opens can send a
// request to a gateway on loopback; it cannot read the answer unless the
// gateway allows its origin, but a "simple" request (a form or text/plain
// POST, which needs no preflight) still runs, and spends the provider's
// key. A page whose name the attacker points at 127.0.0.1 (DNS
// rebinding) is not even cross-origin, and reads the answers. So:
//
//   - on a listener bound to loopback, client or admin, only requests
//     whose Host names this machine (localhost, *.localhost, a loopback
//     address) or one of server.allowed_hosts are served; others get 421
//     (hostGuard);
//   - on the client listener, a request whose Origin names another site
//     is refused with 403 unless server.cors allows that origin, whose
//     preflights are then answered (corsGuard);
//   - a browser that sends no Origin still marks a request from another
//     site with Sec-Fetch-Site (cross-site, same-site), and that is
//     refused the same way. A request with neither comes from no browser
//     (curl, an SDK), whatever its Content-Type: `curl -d`'s form type
//     is served.

// hostGuard serves next only for requests whose Host header names this
// machine or one of allowed, when l listens on loopback; elsewhere the
// Host header is not a defence (the port is reachable by name or not at
// all) and next serves everything. refuse writes the refusal.
func hostGuard(l net.Listener, allowed []string, next http.Handler, refuse func(w http.ResponseWriter, r *http.Request, msg string)) http.Handler {
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok || !a.IP.IsLoopback() {
		return next
	}
	names := make(map[string]bool, len(allowed))
	for _, n := range allowed {
		names[hostName(n)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host, names) {
			// Nothing of this client's is wanted: not the rest of its
			// body either (bodyWithin).
			w.Header().Set("Connection", "close")
			refuse(w, r, fmt.Sprintf("Host %q is not a name this gateway answers to: it listens on loopback, and answers only to localhost, 127.0.0.1, [::1] and the names in server.allowed_hosts (so that a web page whose name points at 127.0.0.1 cannot call it); to allow this name, add %q to server.allowed_hosts",
				short(r.Host), hostName(r.Host)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// localHost reports whether a Host header value names this machine or
// one of names. An empty Host (HTTP/1.0) comes from no browser.
func localHost(hostport string, names map[string]bool) bool {
	if hostport == "" {
		return true
	}
	h := hostName(hostport)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || names[h] {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// hostName is the name in a Host header value or an allowed_hosts entry:
// without port or brackets, lower-case, without a trailing dot.
func hostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// short bounds a client's value quoted in a message.
func short(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// refuseClientHost answers a client request with a Host it may not use:
// 421, in the API's error shape.
func refuseClientHost(w http.ResponseWriter, r *http.Request, msg string) {
	writeErrorStatus(w, dialectOf(r), protocol.Forbidden, http.StatusMisdirectedRequest, msg)
}

// refuseAdminHost answers an admin request with a Host it may not use.
func refuseAdminHost(w http.ResponseWriter, _ *http.Request, msg string) {
	http.Error(w, msg+"\n", http.StatusMisdirectedRequest)
}

// writeErrorStatus writes an error of kind k in d's shape with status,
// for the statuses the API's kinds do not have (421, 415).
func writeErrorStatus(w http.ResponseWriter, d protocol.Dialect, k protocol.Kind, status int, msg string) {
	body := d.ErrorBodyParam(k, msg, "")
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// corsGuard refuses the client requests a web page of another origin
// sends, unless c allows that origin, and answers the allowed origins'
// preflights; a request marked by a browser as from another site
// (Sec-Fetch-Site) without an Origin is refused too.
func corsGuard(c config.CORS, next http.Handler) http.Handler {
	maxAge := strconv.FormatInt(int64(c.Age().Seconds()), 10)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
			if !c.Allows(origin) {
				w.Header().Set("Connection", "close")
				writeErrorStatus(w, dialectOf(r), protocol.Forbidden, http.StatusForbidden, fmt.Sprintf(
					"requests from web pages at %s are refused: a web page may call this gateway only when server.cors.allowed_origins names its origin; to allow it, add %q to server.cors.allowed_origins",
					short(origin), short(origin)))
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST")
				if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" && len(rh) <= 2048 && headerList(rh) {
					h.Set("Access-Control-Allow-Headers", rh)
				}
				h.Set("Access-Control-Max-Age", maxAge)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			// The answer's own headers (X-Sluice-*, Retry-After, the
			// provider's request id and rate limits) are readable too.
			h.Set("Access-Control-Expose-Headers", "*")
		}
		if r.Header.Get("Origin") == "" {
			switch site := r.Header.Get("Sec-Fetch-Site"); site {
			case "cross-site", "same-site":
				writeErrorStatus(w, dialectOf(r), protocol.Forbidden, http.StatusForbidden, fmt.Sprintf(
					"requests from web pages of another site (Sec-Fetch-Site: %s) are refused; a web page may call this gateway only from an origin named in server.cors.allowed_origins", site))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin is the page's own site, host (the
// Host header) served with either scheme.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// headerList reports whether v is a comma-separated list of header
// names, fit to echo in Access-Control-Allow-Headers.
func headerList(v string) bool {
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return false
		}
		for i := 0; i < len(f); i++ {
			c := f[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
				return false
			}
		}
	}
	return true
}
