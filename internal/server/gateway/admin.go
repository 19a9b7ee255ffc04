package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/dashboard"
)

// adminCookie carries the admin token for a browser, which cannot add an
// Authorization header to a page it navigates to.
const adminCookie = "sluice_admin"

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

// guardAdmin requires the admin token, when one is configured, on every
// admin route but the probes (/healthz, /readyz), which stay open so
// load balancers and orchestrators need no credential. The token comes as
// "Authorization: Bearer TOKEN" or as the cookie set by opening
// /dashboard/?token=TOKEN, which then redirects to the bare URL so the
// token does not linger in the address bar or history. Tokens are
// compared in constant time (over their SHA-256, so the length leaks
// nothing either).
func guardAdmin(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte(token))
	ok := func(got string) bool {
		sum := sha256.Sum256([]byte(got))
		return got != "" && subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz":
			next.ServeHTTP(w, r)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/dashboard/") {
			if !ok(t) {
				http.Error(w, "wrong admin token\n", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: adminCookie, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
			return
		}
		if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && ok(bearer) {
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(adminCookie); err == nil && ok(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice admin"`)
		http.Error(w, "the admin API needs its token: send Authorization: Bearer TOKEN (the value of the variable admin.token_env names), or open /dashboard/?token=TOKEN in a browser\n", http.StatusUnauthorized)
	})
}
