package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAdminToken(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("inner")) })
	do := func(h http.Handler, path string, set func(*http.Request)) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		if set != nil {
			set(r)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do(guardAdmin("", inner), "/metrics", nil); w.Code != 200 {
		t.Errorf("without a token configured, /metrics: %d", w.Code)
	}
	h := guardAdmin("s3cret-token", inner)
	for _, probe := range []string{"/healthz", "/readyz"} {
		if w := do(h, probe, nil); w.Code != 200 {
			t.Errorf("%s must stay open for probes: %d", probe, w.Code)
		}
	}
	for _, path := range []string{"/metrics", "/dashboard/", "/dashboard/data.json"} {
		w := do(h, path, nil)
		if w.Code != 401 || !strings.Contains(w.Body.String(), "Authorization: Bearer") || w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s without the token: %d %q", path, w.Code, w.Body.String())
		}
	}
	bearer := func(v string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+v) }
	}
	if w := do(h, "/metrics", bearer("s3cret-token")); w.Code != 200 || w.Body.String() != "inner" {
		t.Errorf("with the token: %d", w.Code)
	}
	for _, wrong := range []string{"s3cret-toke", "s3cret-token2", ""} {
		if w := do(h, "/metrics", bearer(wrong)); w.Code != 401 {
			t.Errorf("with token %q: %d", wrong, w.Code)
		}
	}
	// A browser opens the page with ?token= once, gets a cookie and the
	// bare URL; the cookie then admits the page's polls.
	w := do(h, "/dashboard/?token=s3cret-token", nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/dashboard/" {
		t.Fatalf("?token=: %d, Location %q", w.Code, w.Header().Get("Location"))
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", cookies)
	}
	if w := do(h, "/dashboard/data.json", func(r *http.Request) { r.AddCookie(cookies[0]) }); w.Code != 200 {
		t.Errorf("with the cookie: %d", w.Code)
	}
	if w := do(h, "/dashboard/?token=wrong", nil); w.Code != 401 || len(w.Result().Cookies()) != 0 {
		t.Errorf("a wrong ?token=: %d, cookies %v", w.Code, w.Result().Cookies())
	}
}
