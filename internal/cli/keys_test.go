package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/keystore"
)

// keysServer is the key API over a store in memory, behind a bearer
// token, as a gateway's admin listener serves it.
func keysServer(t *testing.T) *httptest.Server {
	t.Helper()
	s, err := keystore.OpenFile("")
	if err != nil {
		t.Fatal(err)
	}
	api := (&keystore.API{Store: s, Guarded: true, Env: func() keystore.Env {
		return keystore.Env{ConfigKeys: []config.Key{{Name: "from-config", SHA256: config.KeyHash("x")}}, Models: []string{"mock-gpt"}}
	}}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"unauthorized","message":"the admin API needs its token"}}`))
			return
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func runKeys(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Keys(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// Every API command against a served key API: human output, --json, the
// token from SLUICE_ADMIN_TOKEN or --token-env, the URL from --admin or
// SLUICE_ADMIN_URL, and the API's refusals passed on.
func TestKeysCLI(t *testing.T) {
	srv := keysServer(t)
	t.Setenv("SLUICE_ADMIN_URL", srv.URL)
	t.Setenv("SLUICE_ADMIN_TOKEN", "tok")

	code, out, errs := runKeys("create", "team-a", "--team", "search", "--models", "mock-gpt", "--rpm", "60", "--expires", "720h")
	if code != 0 || !strings.Contains(out, "key team-a created") || !strings.Contains(out, "sk-sluice-") || !strings.Contains(out, "limits:") {
		t.Fatalf("create: %d\n%s%s", code, out, errs)
	}
	code, out, _ = runKeys("list")
	if code != 0 || !strings.Contains(out, "from-config") || !strings.Contains(out, "config") || !strings.Contains(out, "team-a") || !strings.Contains(out, "rpm=60") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	if strings.Contains(out, "sk-sluice-") {
		t.Fatal("list shows a secret")
	}
	code, out, _ = runKeys("list", "--json")
	var list map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list["keys"].([]any)) != 2 {
		t.Fatalf("list --json: %d\n%s", code, out)
	}
	if code, out, _ = runKeys("show", "team-a"); code != 0 || !strings.Contains(out, "team:") || !strings.Contains(out, "search") {
		t.Fatalf("show: %d\n%s", code, out)
	}
	if code, out, _ = runKeys("rotate", "team-a", "--grace", "10m"); code != 0 || !strings.Contains(out, "rotated") || !strings.Contains(out, "rotation:") {
		t.Fatalf("rotate: %d\n%s", code, out)
	}
	if code, out, _ = runKeys("disable", "team-a"); code != 0 || !strings.Contains(out, "status:") || !strings.Contains(out, "disabled") {
		t.Fatalf("disable: %d\n%s", code, out)
	}
	if code, out, _ = runKeys("enable", "--json", "team-a"); code != 0 || !strings.Contains(out, `"status": "active"`) {
		t.Fatalf("enable --json: %d\n%s", code, out)
	}
	if code, out, _ = runKeys("revoke", "team-a"); code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %d\n%s", code, out)
	}

	// The API's refusals, passed on with exit 1.
	if code, _, errs = runKeys("create", "bad", "--rpm", "-1"); code != 1 || !strings.Contains(errs, "above 0") {
		t.Errorf("create --rpm -1: %d %s", code, errs)
	}
	if code, _, errs = runKeys("revoke", "from-config"); code != 1 || !strings.Contains(errs, "409") || !strings.Contains(errs, "config file") {
		t.Errorf("revoke a config key: %d %s", code, errs)
	}
	// The token from another variable; none at all says where to put it.
	t.Setenv("OTHER_TOKEN", "tok")
	t.Setenv("SLUICE_ADMIN_TOKEN", "")
	if code, _, errs = runKeys("list", "--token-env", "OTHER_TOKEN"); code != 0 {
		t.Errorf("--token-env: %d %s", code, errs)
	}
	if code, _, errs = runKeys("list"); code != 1 || !strings.Contains(errs, "SLUICE_ADMIN_TOKEN is empty") {
		t.Errorf("no token: %d %s", code, errs)
	}
	// --admin overrides SLUICE_ADMIN_URL.
	t.Setenv("SLUICE_ADMIN_URL", "http://127.0.0.1:1")
	if code, _, errs = runKeys("list", "--admin", srv.URL, "--token-env", "OTHER_TOKEN"); code != 0 {
		t.Errorf("--admin: %d %s", code, errs)
	}
	if code, _, errs = runKeys("list", "--token-env", "OTHER_TOKEN"); code != 1 || !strings.Contains(errs, "did not answer") {
		t.Errorf("nobody at the URL: %d %s", code, errs)
	}
}

// --config finds the admin URL (a wildcard admin_listen asked on
// loopback) and the token's variable.
func TestKeysCLIConfig(t *testing.T) {
	srv := keysServer(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	path := t.TempDir() + "/sluice.yaml"
	yaml := "admin_listen: 0.0.0.0:" + port + "\nadmin:\n  token_env: MY_ADMIN_TOKEN\nproviders:\n  - {name: p, kind: openai, base_url: http://127.0.0.1:1/v1}\nmodels:\n  - {name: m, targets: [{provider: p, model: x}]}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_ADMIN_URL", "")
	t.Setenv("SLUICE_ADMIN_TOKEN", "")
	t.Setenv("MY_ADMIN_TOKEN", "tok")
	if code, out, errs := runKeys("list", "--config", path); code != 0 || !strings.Contains(out, "from-config") {
		t.Errorf("list --config: %d %s%s", code, out, errs)
	}
}

// Every subcommand has --help (exit 0), and the usage says which
// commands are declarative and which ask a gateway.
func TestKeysCLIHelp(t *testing.T) {
	for _, c := range []string{"create", "list", "show", "rotate", "revoke", "disable", "enable", "new", "hash"} {
		if code, _, errs := runKeys(c, "--help"); code != 0 || !strings.Contains(errs, "usage: sluice keys "+c) {
			t.Errorf("keys %s --help: %d %s", c, code, errs)
		}
	}
	code, out, _ := runKeys("--help")
	if code != 0 || !strings.Contains(out, "Keys made at run time") || !strings.Contains(out, "Keys declared in the config file") {
		t.Errorf("keys --help: %d %s", code, out)
	}
	if code, _, errs := runKeys("show"); code != 2 || !strings.Contains(errs, "one key NAME") {
		t.Errorf("show without a name: %d %s", code, errs)
	}
	if code, _, errs := runKeys("list", "--admin", "ftp://x"); code != 2 || !strings.Contains(errs, "not an http") {
		t.Errorf("a bad --admin: %d %s", code, errs)
	}
}
