package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const sessionConfig = `listen: ${LISTEN}
admin_listen: ${ADMIN}
admin: {token_env: SLUICE_E2E_ADMIN_TOKEN}
state: {dir: "${STATE}"}
providers:
  - {name: up, kind: openai, base_url: "http://${UP}/v1"}
models:
  - {name: chat, targets: [{provider: up, model: m}]}
`

// The dashboard behind an admin token, in a real browser: headless
// Chromium opens /dashboard/?token=TOKEN, lands on the bare URL, and the
// page draws its data with the session it got; the browser holds that
// session, not the token, in an HttpOnly, SameSite=Strict cookie for
// /dashboard/ and /admin/ that expires, and no script can read it. From
// the dashboard's own page a POST to the key API with the session makes
// a key. Without its session the page says how to open a new one. From
// a page on another port of the same machine (same-site to
// the browser, so it attaches the cookie) text/plain POSTs that need no
// preflight make no key and disable none. The page logs no error.
func TestDashboardSessionInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sluice serve and a browser for a few seconds")
	}
	browser := chromium(t)
	const token = "e2e-admin-token-0123456789abcdef"
	t.Setenv("SLUICE_E2E_ADMIN_TOKEN", token)
	_, admin, _, _ := serveProcess(t, strings.ReplaceAll(sessionConfig, "${STATE}", t.TempDir()))
	adminURL := "http://" + admin

	// A page of another origin: another port on loopback.
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>another app on this machine</title>")
	}))
	defer foreign.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // root in CI containers
		chromedp.Flag("disable-gpu", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	var mu sync.Mutex
	var problems []string
	watching := true // the dashboard's page; the other origin's refused requests are expected errors
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		if !watching {
			return
		}
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				problems = append(problems, "console."+string(ev.Type))
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				problems = append(problems, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text+" "+exceptionText(ev.ExceptionDetails))
		}
	}); err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(adminURL+"/dashboard/?token="+token)); err != nil {
		t.Fatalf("loading the dashboard: %v", err)
	}
	// The page's own data, fetched with the session; the token gone from
	// the address bar; no cookie a script can read.
	const loaded = `(() => {
	  const d = window.sluiceDashboard;
	  return !!d && d.samples.length > 0 && location.search === "" && location.pathname === "/dashboard/" && document.cookie === "";
	})()`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](loaded, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " cookie=" + JSON.stringify(document.cookie) + " samples=" + (window.sluiceDashboard ? window.sluiceDashboard.samples.length : "none")`))
		t.Fatalf("the dashboard never drew its data with the session: %v (%s)", err, state)
	}

	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{adminURL + "/dashboard/", adminURL + "/admin/keys", adminURL + "/metrics"}})
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, c := range cookies.Cookies {
		paths[c.Path] = true
		ends := time.Unix(int64(c.Expires), 0)
		if strings.Contains(c.Value, token) || !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Session ||
			ends.Before(time.Now().Add(11*time.Hour)) || ends.After(time.Now().Add(13*time.Hour)) {
			t.Errorf("the browser holds cookie %s (path %s, HttpOnly %v, SameSite %q, session %v, ends %v); want a session id, not the token, HttpOnly, Strict, ending in 12 h",
				c.Name, c.Path, c.HTTPOnly, c.SameSite, c.Session, ends)
		}
	}
	if len(paths) != 2 || !paths["/dashboard/"] || !paths["/admin/"] {
		t.Errorf("the browser's admin cookies are for paths %v; want /dashboard/ and /admin/", paths)
	}

	// A write from the dashboard's own page, with the session.
	made, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch("/admin/keys", {method: "POST", headers: {"Content-Type": "text/plain"}, body: JSON.stringify({name: "from-the-dashboard"})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || made != http.StatusCreated {
		t.Errorf("a POST to /admin/keys from the dashboard's page: %d, %v; want 201", made, err)
	}
	mu.Lock()
	watching = false
	got := problems
	mu.Unlock()
	if len(got) > 0 {
		t.Errorf("the dashboard's page logged %d errors:\n%s", len(got), strings.Join(got, "\n"))
	}

	// When the session is gone (it ended, or the gateway restarted), the
	// page says how to open a new one.
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	const told = `document.getElementById("status").textContent.includes("/dashboard/?token=")`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](told, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`))
		t.Errorf("without its session the page does not say how to open a new one: %v (status %q)", err, status)
	}
	// A new session, for the page of another port to borrow.
	if err := chromedp.Do(ctx, chromedp.Navigate(adminURL+"/dashboard/?token="+token)); err != nil {
		t.Fatal(err)
	}

	// The same browser, on a page of another port: text/plain POSTs,
	// which need no preflight, with whatever cookies the browser sends.
	if err := chromedp.Do(ctx, chromedp.Navigate(foreign.URL)); err != nil {
		t.Fatal(err)
	}
	attack := fmt.Sprintf(`Promise.all([
	  fetch(%[1]q + "/admin/keys", {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body: JSON.stringify({name: "from-another-port"})}),
	  fetch(%[1]q + "/admin/keys/from-the-dashboard/disable", {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}}),
	]).then(() => "sent", e => "failed: " + e)`, adminURL)
	sent, err := chromedp.Run(ctx, chromedp.Evaluate[string](attack, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	keyStatus := func(name string) (int, string) {
		req, _ := http.NewRequest("GET", adminURL+"/admin/keys/"+name, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Status string `json:"status"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Status
	}
	if code, _ := keyStatus("from-another-port"); code != http.StatusNotFound {
		t.Errorf("a page of another port made a key with a text/plain POST (%s): GET answers %d", sent, code)
	}
	if code, status := keyStatus("from-the-dashboard"); code != 200 || status != "active" {
		t.Errorf("after a page of another port POSTed disable (%s): the key is %d %q; want it active", sent, code, status)
	}
	t.Logf("the page of another port's POSTs: %s", sent)
}
