package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// adminDo sends one request through h and returns the answer.
func adminDo(h http.Handler, method, path string, set func(*http.Request)) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://127.0.0.1:9090"+path, strings.NewReader("{}"))
	if set != nil {
		set(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func withBearer(v string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+v) }
}

func withCookies(cs ...*http.Cookie) func(*http.Request) {
	return func(r *http.Request) {
		for _, c := range cs {
			r.AddCookie(c)
		}
	}
}

// adminLogin opens /dashboard/?token= on h and returns the session
// cookies it set.
func adminLogin(t *testing.T, h http.Handler, token string) []*http.Cookie {
	t.Helper()
	w := adminDo(h, "GET", "/dashboard/?token="+token, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/dashboard/" {
		t.Fatalf("?token=: %d, Location %q", w.Code, w.Header().Get("Location"))
	}
	var out []*http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == adminSessionCookie {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatalf("?token= set no %s cookie: %v", adminSessionCookie, w.Header().Values("Set-Cookie"))
	}
	return out
}

func TestAdminToken(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("inner")) })
	if w := adminDo(guardAdmin("", newAdminSessions(nil), inner), "GET", "/metrics", nil); w.Code != 200 {
		t.Errorf("without a token configured, /metrics: %d", w.Code)
	}
	h := guardAdmin("s3cret-token", newAdminSessions(nil), inner)
	for _, probe := range []string{"/healthz", "/readyz"} {
		if w := adminDo(h, "GET", probe, nil); w.Code != 200 {
			t.Errorf("%s must stay open for probes: %d", probe, w.Code)
		}
	}
	for _, path := range []string{"/metrics", "/dashboard/", "/dashboard/data.json"} {
		w := adminDo(h, "GET", path, nil)
		if w.Code != 401 || !strings.Contains(w.Body.String(), "Authorization: Bearer") || w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s without the token: %d %q", path, w.Code, w.Body.String())
		}
	}
	if w := adminDo(h, "GET", "/metrics", withBearer("s3cret-token")); w.Code != 200 || w.Body.String() != "inner" {
		t.Errorf("with the token: %d", w.Code)
	}
	for _, wrong := range []string{"s3cret-toke", "s3cret-token2", ""} {
		if w := adminDo(h, "GET", "/metrics", withBearer(wrong)); w.Code != 401 {
			t.Errorf("with token %q: %d", wrong, w.Code)
		}
	}
	// A browser opens the page with ?token= once, gets a session cookie
	// and the bare URL; the cookie then admits the page's polls.
	cookies := adminLogin(t, h, "s3cret-token")
	if w := adminDo(h, "GET", "/dashboard/data.json", withCookies(cookies[0])); w.Code != 200 {
		t.Errorf("with the session cookie: %d", w.Code)
	}
	if w := adminDo(h, "GET", "/dashboard/?token=wrong", nil); w.Code != 401 || len(w.Result().Cookies()) != 0 {
		t.Errorf("a wrong ?token=: %d, cookies %v", w.Code, w.Result().Cookies())
	}
}

// The cookie a browser gets for the admin token is a session, not the
// token: random, different at each exchange, and useless as a bearer
// token; the token itself in a cookie admits nothing.
func TestAdminSessionCookieIsNotTheToken(t *testing.T) {
	const token = "s3cret-token-of-some-length"
	h := guardAdmin(token, newAdminSessions(nil), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	first, second := adminLogin(t, h, token), adminLogin(t, h, token)
	for _, c := range append(first, second...) {
		if c.Value == token || strings.Contains(c.Value, token) || len(c.Value) < 40 {
			t.Errorf("cookie %s=%q: want a random session id (43 characters), not the token", c.Name, c.Value)
		}
	}
	if first[0].Value == second[0].Value {
		t.Errorf("two exchanges gave the same session %q", first[0].Value)
	}
	if w := adminDo(h, "GET", "/dashboard/data.json", withBearer(first[0].Value)); w.Code != 401 {
		t.Errorf("the session id as a bearer token: %d, want 401", w.Code)
	}
	for _, name := range []string{adminSessionCookie, legacyAdminCookie} {
		w := adminDo(h, "GET", "/dashboard/data.json", withCookies(&http.Cookie{Name: name, Value: token}))
		if w.Code != 401 {
			t.Errorf("the token itself in cookie %s: %d, want 401", name, w.Code)
		}
	}
	// The cookie an older gateway set, holding the token for every path,
	// is deleted by any answer the browser gets.
	w := adminDo(h, "GET", "/dashboard/data.json", withCookies(first[0], &http.Cookie{Name: legacyAdminCookie, Value: token}))
	cleared := false
	for _, c := range w.Result().Cookies() {
		cleared = cleared || (c.Name == legacyAdminCookie && c.Path == "/" && c.MaxAge < 0 && c.Value == "")
	}
	if w.Code != 200 || !cleared {
		t.Errorf("with the old token cookie beside a session: %d, Set-Cookie %q; want 200 and the old cookie deleted", w.Code, w.Header().Values("Set-Cookie"))
	}
}

// The session cookie is HttpOnly (no script reads it), SameSite=Strict,
// sent only to the dashboard and the admin API (not /metrics, not the
// client API's paths), Secure over TLS, and expires with the session.
func TestAdminSessionCookieAttributes(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	h := guardAdmin("s3cret-token", newAdminSessions(func() time.Time { return now }), http.NotFoundHandler())
	w := adminDo(h, "GET", "/dashboard/?token=s3cret-token", nil)
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("the exchange's Cache-Control %q, want no-store", got)
	}
	paths := map[string]bool{}
	var id string
	for _, c := range w.Result().Cookies() {
		if c.Name != adminSessionCookie {
			continue
		}
		paths[c.Path] = true
		if id == "" {
			id = c.Value
		}
		if c.Value != id {
			t.Errorf("the cookies for /dashboard/ and /admin/ hold different sessions")
		}
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure {
			t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP", c)
		}
		if c.MaxAge != int(adminSessionTTL/time.Second) || !c.Expires.Equal(now.Add(adminSessionTTL)) {
			t.Errorf("cookie Max-Age %d, Expires %v; want %v, %v", c.MaxAge, c.Expires, int(adminSessionTTL/time.Second), now.Add(adminSessionTTL))
		}
	}
	if len(paths) != 2 || !paths["/dashboard/"] || !paths["/admin/"] {
		t.Errorf("session cookie paths %v, want exactly /dashboard/ and /admin/", paths)
	}
	r := httptest.NewRequest("GET", "https://127.0.0.1:9090/dashboard/?token=s3cret-token", nil)
	tw := httptest.NewRecorder()
	h.ServeHTTP(tw, r)
	for _, c := range tw.Result().Cookies() {
		if c.Name == adminSessionCookie && !c.Secure {
			t.Errorf("over TLS the cookie is not Secure: %+v", c)
		}
	}
}

// A write to the admin API (any method but GET, HEAD, OPTIONS) from a
// web page of another origin is refused with 403 before anything else
// sees it, whatever credential comes with it: a text/plain POST, which
// a page sends without a preflight, with the session cookie a browser
// attaches. The same write from the admin listener's own pages, or from
// a client that is no browser, goes through.
func TestAdminCrossOriginWritesRefused(t *testing.T) {
	var reached atomic.Int32
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	for _, token := range []string{"s3cret-token", ""} {
		h := guardAdmin(token, newAdminSessions(nil), inner)
		var session []*http.Cookie
		if token != "" {
			session = adminLogin(t, h, token)
		}
		textPlain := func(extra map[string]string) func(*http.Request) {
			return func(r *http.Request) {
				r.Header.Set("Content-Type", "text/plain")
				for _, c := range session {
					r.AddCookie(c)
				}
				for k, v := range extra {
					r.Header.Set(k, v)
				}
			}
		}
		for _, from := range []map[string]string{
			{"Origin": "http://127.0.0.1:3000", "Sec-Fetch-Site": "same-site"}, // another port of the same host
			{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
			{"Origin": "http://127.0.0.1:3000"}, // a browser without Fetch Metadata
			{"Origin": "null"},                  // a sandboxed frame, a data: URL
			{"Sec-Fetch-Site": "cross-site"},    // a browser that sent no Origin
			{"Sec-Fetch-Site": "same-site"},
		} {
			for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
				for _, path := range []string{"/admin/keys", "/admin/keys/k/disable", "/dashboard/data.json"} {
					before := reached.Load()
					w := adminDo(h, method, path, textPlain(from))
					if w.Code != http.StatusForbidden || reached.Load() != before || !strings.Contains(w.Body.String(), "another origin") {
						t.Errorf("token %q: %s %s from %v: %d %q, reached %v; want 403 saying why, before the handler",
							token, method, path, from, w.Code, w.Body.String(), reached.Load() != before)
					}
				}
			}
		}
		// Reads from another origin are not refused here: the browser
		// keeps their answers from the page.
		if w := adminDo(h, "GET", "/dashboard/data.json", textPlain(map[string]string{"Origin": "http://127.0.0.1:3000", "Sec-Fetch-Site": "same-site"})); w.Code == http.StatusForbidden {
			t.Errorf("token %q: a GET from another origin: 403", token)
		}
		if token == "" {
			continue
		}
		// The dashboard's own page, and the operator's address bar.
		for _, own := range []map[string]string{
			{"Origin": "http://127.0.0.1:9090", "Sec-Fetch-Site": "same-origin"},
			{"Origin": "http://127.0.0.1:9090"},
			{"Sec-Fetch-Site": "same-origin"},
			{"Sec-Fetch-Site": "none"},
		} {
			if w := adminDo(h, "POST", "/admin/keys", textPlain(own)); w.Code != http.StatusCreated {
				t.Errorf("a same-origin POST with the session (%v): %d %q", own, w.Code, w.Body.String())
			}
		}
		// curl or sluice keys: a bearer token, no browser headers.
		if w := adminDo(h, "POST", "/admin/keys", withBearer(token)); w.Code != http.StatusCreated {
			t.Errorf("a bearer POST from no browser: %d %q", w.Code, w.Body.String())
		}
		if w := adminDo(h, "POST", "/admin/keys", withBearer("wrong")); w.Code != http.StatusUnauthorized {
			t.Errorf("a bearer POST with a wrong token: %d", w.Code)
		}
	}
}

// A session ends adminSessionTTL after the exchange: its cookie is then
// refused with a 401 that says so (and the cookie is deleted), while the
// bearer token still works.
func TestAdminSessionExpires(t *testing.T) {
	var now atomic.Pointer[time.Time]
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	now.Store(&start)
	clock := func() time.Time { return *now.Load() }
	h := guardAdmin("s3cret-token", newAdminSessions(clock), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	session := adminLogin(t, h, "s3cret-token")
	at := func(d time.Duration) {
		t := start.Add(d)
		now.Store(&t)
	}
	at(adminSessionTTL - time.Second)
	if w := adminDo(h, "GET", "/dashboard/data.json", withCookies(session[0])); w.Code != 200 {
		t.Fatalf("a second before its end, the session: %d", w.Code)
	}
	at(adminSessionTTL)
	w := adminDo(h, "GET", "/dashboard/data.json", withCookies(session[0]))
	if w.Code != 401 || !strings.Contains(w.Body.String(), "expired") {
		t.Errorf("at its end, the session: %d %q; want 401 saying it expired", w.Code, w.Body.String())
	}
	deleted := 0
	for _, c := range w.Result().Cookies() {
		if c.Name == adminSessionCookie && c.MaxAge < 0 {
			deleted++
		}
	}
	if deleted != len(sessionPaths) {
		t.Errorf("the expired session's cookies are not deleted: %q", w.Header().Values("Set-Cookie"))
	}
	if w := adminDo(h, "POST", "/admin/keys", withCookies(session[0])); w.Code != 401 {
		t.Errorf("a write with the expired session: %d", w.Code)
	}
	if w := adminDo(h, "GET", "/dashboard/data.json", withBearer("s3cret-token")); w.Code != 200 {
		t.Errorf("the bearer token after the session's end: %d", w.Code)
	}
}

// The session table holds at most maxAdminSessions: expired sessions go
// when a new one is opened, and past the bound the one closest to its
// end is dropped, so logging in again and again grows nothing.
func TestAdminSessionsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s := newAdminSessions(func() time.Time { return now })
	first, _ := s.open()
	for range 3 * maxAdminSessions {
		now = now.Add(time.Second)
		s.open()
	}
	if n := s.size(); n != maxAdminSessions {
		t.Errorf("%d sessions held after %d exchanges, want %d", n, 3*maxAdminSessions+1, maxAdminSessions)
	}
	if s.check(first) != sessionUnknown {
		t.Errorf("the oldest session survived the bound")
	}
	last, _ := s.open()
	now = now.Add(adminSessionTTL)
	s.open()
	if n := s.size(); n != 1 {
		t.Errorf("%d sessions held after every earlier one expired, want 1 (expired ones pruned)", n)
	}
	if s.check(last) != sessionUnknown {
		t.Errorf("an expired session is still known")
	}
}
