package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/dashboard"
)

// Dashboard is the host's dashboard recorder: it samples the metrics once
// a second while the host serves. A host such as sluice demo marks
// events on it (Recorder.Mark).
func (h *Host) Dashboard() *dashboard.Recorder { return h.dash }

// startDashboard samples the metrics until the host shuts down.
// REQUIRES: h.mu held.
func (h *Host) startDashboard() {
	if h.dashStop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.dashStop = cancel
		go h.dash.Run(ctx)
	}
}

func dashboardBudgets(cfg *config.Config) dashboard.Budgets {
	return dashboard.Budgets{Hedge: cfg.Hedging.Budget, Retry: cfg.Retries.Budget}
}

// guardAdmin is the admin listener's door.
//
// Writes first: a request that may change something (any method but
// GET, HEAD and OPTIONS) sent by a web page of another origin is refused
// with 403, whatever credential it carries (sameOriginWrite). Cookies
// are not kept apart by port, so a page on another port of the same
// host is "same-site" to a browser and gets SameSite=Strict cookies
// sent along; only the Origin (or Sec-Fetch-Site) tells it apart.
//
// Then the token, when one is configured, on every route but the probes
// (/healthz, /readyz), which stay open so load balancers and
// orchestrators need no credential. The token comes as "Authorization:
// Bearer TOKEN" (curl, Prometheus, sluice keys), compared in constant
// time over its SHA-256 so the length leaks nothing either. A browser,
// which cannot add a header to a page it navigates to, opens
// /dashboard/?token=TOKEN once: the token is exchanged for a session
// (adminSessions), a random value that is not the token, held in an
// HttpOnly, SameSite=Strict cookie sent only to the dashboard and
// /admin/, that expires; the answer redirects to the bare URL so the
// token does not linger in the address bar or history.
func guardAdmin(token string, sessions *adminSessions, next http.Handler) http.Handler {
	if token == "" {
		return sameOriginWrite(next)
	}
	want := sha256.Sum256([]byte(token))
	ok := func(got string) bool {
		sum := sha256.Sum256([]byte(got))
		return got != "" && subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	}
	return sameOriginWrite(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz":
			next.ServeHTTP(w, r)
			return
		}
		if _, err := r.Cookie(legacyAdminCookie); err == nil {
			// An older gateway kept the token itself in this cookie, sent
			// to every path of every port of the host: drop it.
			http.SetCookie(w, &http.Cookie{Name: legacyAdminCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/dashboard/") {
			if !ok(t) {
				http.Error(w, "wrong admin token: open /dashboard/?token=TOKEN with the value of the variable admin.token_env names\n", http.StatusUnauthorized)
				return
			}
			id, expires := sessions.open()
			for _, p := range sessionPaths {
				http.SetCookie(w, sessionCookie(r, p, id, expires, sessions.ttl))
			}
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Referrer-Policy", "no-referrer")
			http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
			return
		}
		if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && ok(bearer) {
			next.ServeHTTP(w, r)
			return
		}
		expired := false
		for _, c := range r.CookiesNamed(adminSessionCookie) {
			switch sessions.check(c.Value) {
			case sessionLive:
				next.ServeHTTP(w, r)
				return
			case sessionExpired:
				expired = true
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice admin"`)
		if expired {
			for _, p := range sessionPaths {
				http.SetCookie(w, &http.Cookie{Name: adminSessionCookie, Path: p, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
			}
			http.Error(w, fmt.Sprintf("the dashboard session has expired (a session lasts %.0f hours): open /dashboard/?token=TOKEN again, or send Authorization: Bearer TOKEN\n", sessions.ttl.Hours()), http.StatusUnauthorized)
			return
		}
		http.Error(w, "the admin API needs its token: send Authorization: Bearer TOKEN (the value of the variable admin.token_env names), or open /dashboard/?token=TOKEN in a browser\n", http.StatusUnauthorized)
	}))
}

// The admin session's cookie, and the paths it is sent to: the dashboard
// (its page and its data) and the admin API; not /metrics or the
// profiles, nor the client API's paths (a browser sends a cookie to
// every port of its host, so only the path narrows it).
const (
	adminSessionCookie = "sluice_session"
	// legacyAdminCookie is the cookie that held the token itself.
	legacyAdminCookie = "sluice_admin"
)

var sessionPaths = []string{"/dashboard/", "/admin/"}

func sessionCookie(r *http.Request, path, id string, expires time.Time, ttl time.Duration) *http.Cookie {
	return &http.Cookie{Name: adminSessionCookie, Value: id, Path: path, Expires: expires, MaxAge: int(ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// sameOriginWrite refuses, with 403, a request that may change state
// (any method but GET, HEAD and OPTIONS) that a browser marks as sent by
// a page of another origin: an Origin header naming another host, or
// Sec-Fetch-Site other than same-origin or none (none: the user typed
// or bookmarked it). A request with neither header comes from no browser
// (curl, sluice keys, a script) and is served, whatever its
// Content-Type. Reads are not refused: a page of another origin cannot
// read the answer, and a read changes nothing.
func sameOriginWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		from := ""
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			from = "Sec-Fetch-Site: " + short(site)
		}
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
			from = "Origin: " + short(origin)
		}
		if from != "" {
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("refused: a %s to the admin API from a web page of another origin (%s); the admin API takes changes only from its own pages (at %s) or from clients that are not browsers, such as curl or sluice keys with Authorization: Bearer TOKEN\n",
				short(r.Method), from, short(r.Host)), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
