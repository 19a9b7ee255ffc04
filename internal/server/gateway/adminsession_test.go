package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// What a web page on another port of the operator's machine could do
// with the dashboard's cookie, which the browser sends to every port of
// the host: text/plain POSTs (no preflight) made a key, and disabled and
// enabled one. On a serving host with a key store, a browser (a cookie
// jar, which keeps cookies by path as a browser does) that opened the
// dashboard with the token holds a session, not the token, sent to the
// dashboard and the key API only; the same POSTs with another origin are
// refused with 403 and change nothing, and from the dashboard's own
// origin they work, as do curl's with the bearer token.
func TestAdminSessionCrossOriginWrites(t *testing.T) {
	hs := keyHost(t, func(c *config.Config) { c.State.Dir = t.TempDir() }, nil)
	hs.create(t, `{"name":"existing"}`)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(hs.admin + "/dashboard/?token=test-admin-token")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Sluice dashboard") || resp.Request.URL.RawQuery != "" {
		t.Fatalf("opening the dashboard with ?token=: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	sent := func(raw string) []*http.Cookie {
		u, _ := url.Parse(raw)
		return jar.Cookies(u)
	}
	session := sent(hs.admin + "/dashboard/data.json")
	if len(session) != 1 {
		t.Fatalf("the browser sends the dashboard %v; want one session cookie", session)
	}
	if strings.Contains(session[0].Value, "test-admin-token") {
		t.Errorf("the browser holds the admin token in cookie %s; want a session that is not the token", session[0].Name)
	}
	if c := sent(hs.admin + "/admin/keys"); len(c) != 1 || c[0].Value != session[0].Value {
		t.Errorf("the browser sends the key API %v; want the session", c)
	}
	for _, elsewhere := range []string{hs.admin + "/metrics", hs.admin + "/debug/pprof/", hs.url + "/v1/chat/completions", hs.admin + "/"} {
		if c := sent(elsewhere); len(c) != 0 {
			t.Errorf("the browser sends %s the cookies %v; the session is for the dashboard and /admin/ only", elsewhere, c)
		}
	}

	post := func(path, origin, site string) (int, string) {
		t.Helper()
		body := ""
		if path == "/admin/keys" {
			body = `{"name":"from-a-page"}`
		}
		req, _ := http.NewRequest("POST", hs.admin+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	foreign := []struct{ origin, site string }{
		{"http://127.0.0.1:3000", "same-site"}, // another port of this machine
		{"http://localhost:5173", "same-site"},
		{"https://evil.example", "cross-site"},
		{"http://127.0.0.1:3000", ""},
		{"", "cross-site"},
	}
	for _, f := range foreign {
		for _, path := range []string{"/admin/keys", "/admin/keys/existing/disable", "/admin/keys/existing/enable", "/admin/keys/existing/revoke"} {
			if code, body := post(path, f.origin, f.site); code != http.StatusForbidden || !strings.Contains(body, "another origin") {
				t.Errorf("POST %s from Origin %q, Sec-Fetch-Site %q, with the session: %d %q; want 403", path, f.origin, f.site, code, body)
			}
		}
	}
	code, out := hs.adminCall(t, "GET", "/admin/keys/existing", "")
	if code != 200 || out["status"] != "active" {
		t.Errorf("after the refused POSTs, the key: %d %v; want it active, as before", code, out)
	}
	if code, _ := hs.adminCall(t, "GET", "/admin/keys/from-a-page", ""); code != http.StatusNotFound {
		t.Errorf("a refused POST made a key: %d", code)
	}

	// The dashboard's own origin, with the session.
	own := hs.admin
	if code, body := post("/admin/keys", own, "same-origin"); code != http.StatusCreated {
		t.Errorf("a same-origin POST with the session: %d %s", code, body)
	}
	if code, body := post("/admin/keys/existing/disable", own, "same-origin"); code != 200 {
		t.Errorf("a same-origin disable with the session: %d %s", code, body)
	}
	// curl with the bearer token, and without any credential.
	if code, out := hs.adminCall(t, "POST", "/admin/keys/existing/enable", ""); code != 200 {
		t.Errorf("a bearer enable from no browser: %d %v", code, out)
	}
	req, _ := http.NewRequest("POST", hs.admin+"/admin/keys", strings.NewReader(`{"name":"anon"}`))
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a POST without a credential: %d, want 401", resp.StatusCode)
	}
}

// The admin token is read at start: a reload whose admin.token_env
// names another value (the only way a reload can change it) is logged,
// and the running token, and the sessions opened with it, stay. Only a
// restart changes the token, and a restart ends every session (they live
// in memory).
func TestReloadKeepsTheAdminToken(t *testing.T) {
	t.Setenv("SLUICE_T_ADMIN_A", "first-admin-token-0123")
	t.Setenv("SLUICE_T_ADMIN_B", "second-admin-token-0123")
	base, stop, err := mock.New(mock.Config{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	var logs bytes.Buffer
	sw := &syncWriter{w: &logs}
	cfg := hostConfig(base, func(c *config.Config) { c.Admin.TokenEnv = "SLUICE_T_ADMIN_A" })
	h, err := gateway.NewHost(cfg, gateway.Options{Logger: gateway.NewLogger(sw, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.Shutdown(ctx, 0)
	})
	admin := httptest.NewServer(h.AdminHandler())
	defer admin.Close()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	if resp, err := browser.Get(admin.URL + "/dashboard/?token=first-admin-token-0123"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != 200 {
		t.Fatalf("opening the dashboard: %d", resp.StatusCode)
	}
	if err := h.Reload(hostConfig(base, func(c *config.Config) { c.Admin.TokenEnv = "SLUICE_T_ADMIN_B" })); err != nil {
		t.Fatal(err)
	}
	sw.mu.Lock()
	text := logs.String()
	sw.mu.Unlock()
	if !strings.Contains(text, "admin token (admin.token_env) changes only at a restart") {
		t.Errorf("a reload that changes the admin token is not logged:\n%s", text)
	}
	status := func(c *http.Client, bearer string) int {
		req, _ := http.NewRequest("GET", admin.URL+"/dashboard/data.json", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(browser, ""); got != 200 {
		t.Errorf("the session after the reload: %d", got)
	}
	if got := status(http.DefaultClient, "first-admin-token-0123"); got != 200 {
		t.Errorf("the running token after the reload: %d", got)
	}
	if got := status(http.DefaultClient, "second-admin-token-0123"); got != 401 {
		t.Errorf("the reloaded config's token before a restart: %d, want 401", got)
	}
}
