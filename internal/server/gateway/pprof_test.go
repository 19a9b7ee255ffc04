package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// The runtime profiles are served on the admin listener behind its token,
// and never on the client listener.
func TestProfilesOnlyOnAdminBehindToken(t *testing.T) {
	t.Setenv("SLUICE_T_ADMIN_TOKEN", "s3cret-token")
	hs := newHostStack(t, mock.Config{}, func(c *config.Config) { c.Admin.TokenEnv = "SLUICE_T_ADMIN_TOKEN" })
	get := func(url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/heap?gc=1&debug=1": "heap profile:",
		"/debug/pprof/goroutine?debug=1": "goroutine profile:",
		"/debug/pprof/symbol":            "num_symbols",
		"/debug/pprof/cmdline":           "",
		"/debug/pprof/trace?seconds=0":   "",
	} {
		if code, _ := get(hs.admin+path, ""); code != http.StatusUnauthorized {
			t.Errorf("admin %s without the token: %d, want 401", path, code)
		}
		code, body := get(hs.admin+path, "s3cret-token")
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("admin %s with the token: %d, want 200 holding %q; body starts %.200q", path, code, want, body)
		}
	}
	if code, _ := get(hs.url+"/debug/pprof/", "s3cret-token"); code != http.StatusNotFound {
		t.Errorf("client listener /debug/pprof/: %d, want 404", code)
	}
	if code, _ := get(hs.url+"/debug/pprof/heap", ""); code != http.StatusNotFound {
		t.Errorf("client listener /debug/pprof/heap: %d, want 404", code)
	}
}
