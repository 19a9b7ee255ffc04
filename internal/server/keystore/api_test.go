package keystore

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
)

// testAPI is an API over s with one config key, "cfg", and models a and b.
func testAPI(s Store) *API {
	return &API{Store: s, Guarded: true, Env: func() Env {
		return Env{ConfigKeys: []config.Key{{Name: "cfg", SHA256: config.KeyHash("cfg-secret"), Limits: config.Limits{RPM: 10}}}, Models: []string{"a", "b"}}
	}}
}

// call sends method path body to h and decodes the JSON answer.
func call(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(method, "http://admin"+path, strings.NewReader(body))
	if strings.ContainsAny(path, "\x00\x7f") {
		r.URL.Path = path
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %q", method, path, w.Body.String())
	}
	return w.Code, out
}

func errMsg(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// Every operation, on both stores.
func TestAPIOperations(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		h := testAPI(s).Handler()
		exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		code, out := call(t, h, "POST", "/admin/keys", `{"name":"team-a","team":"search","priority":"background","models":["a"],"limits":{"rpm":60,"otpm":1000},"expires_at":"`+exp+`"}`)
		if code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, out)
		}
		secret, _ := out["secret"].(string)
		if !strings.HasPrefix(secret, "sk-sluice-") {
			t.Fatalf("create gave no secret: %v", out)
		}
		key := out["key"].(map[string]any)
		if key["source"] != "api" || key["team"] != "search" || key["status"] != "active" || key["expires_at"] != exp {
			t.Fatalf("create's record: %v", key)
		}
		if lim := key["limits"].(map[string]any); lim["rpm"] != 60.0 || lim["otpm"] != 1000.0 {
			t.Fatalf("limits: %v", lim)
		}
		rec := s.Snapshot().Records["team-a"]
		if rec.Key.SHA256 != config.KeyHash(secret) || rec.Key.Tenant != "search" || rec.CreatedAt.IsZero() {
			t.Fatalf("stored: %+v", rec)
		}

		// The list: the config key first, as source config; no secrets.
		code, out = call(t, h, "GET", "/admin/keys", "")
		if code != 200 {
			t.Fatalf("list: %d %v", code, out)
		}
		raw, _ := json.Marshal(out)
		if strings.Contains(string(raw), secret) {
			t.Fatal("the list shows a secret")
		}
		keys := out["keys"].([]any)
		if len(keys) != 2 || keys[0].(map[string]any)["source"] != "config" || keys[1].(map[string]any)["name"] != "team-a" {
			t.Fatalf("list: %v", keys)
		}

		if code, out = call(t, h, "GET", "/admin/keys/team-a", ""); code != 200 || out["name"] != "team-a" {
			t.Fatalf("show: %d %v", code, out)
		}
		if code, out = call(t, h, "GET", "/admin/keys/cfg", ""); code != 200 || out["source"] != "config" {
			t.Fatalf("show config key: %d %v", code, out)
		}

		// Rotate with a grace: a new secret; the old hash works until it ends.
		code, out = call(t, h, "POST", "/admin/keys/team-a/rotate", `{"grace":"10m"}`)
		if code != 200 {
			t.Fatalf("rotate: %d %v", code, out)
		}
		next, _ := out["secret"].(string)
		rec = s.Snapshot().Records["team-a"]
		if next == secret || rec.Key.SHA256 != config.KeyHash(next) || rec.OldSHA256 != config.KeyHash(secret) || time.Until(rec.OldUntil) < 9*time.Minute {
			t.Fatalf("after rotate: %+v", rec)
		}
		if out["key"].(map[string]any)["rotation"] == nil {
			t.Fatalf("rotate's record shows no rotation: %v", out)
		}
		// Without a grace the old secret stops at once.
		call(t, h, "POST", "/admin/keys/team-a/rotate", "")
		if rec = s.Snapshot().Records["team-a"]; rec.OldSHA256 != "" {
			t.Fatalf("rotate without grace kept the old secret: %+v", rec)
		}

		if code, out = call(t, h, "POST", "/admin/keys/team-a/disable", ""); code != 200 || out["status"] != "disabled" || !s.Snapshot().Records["team-a"].Disabled {
			t.Fatalf("disable: %d %v", code, out)
		}
		if code, out = call(t, h, "POST", "/admin/keys/team-a/enable", ""); code != 200 || out["status"] != "active" || s.Snapshot().Records["team-a"].Disabled {
			t.Fatalf("enable: %d %v", code, out)
		}
		if code, out = call(t, h, "POST", "/admin/keys/team-a/revoke", ""); code != 200 || out["revoked"] != true || !s.Snapshot().Records["team-a"].Revoked {
			t.Fatalf("revoke: %d %v", code, out)
		}
		// Revoked is for good: gone from the list, 404 on every action.
		if _, out = call(t, h, "GET", "/admin/keys", ""); len(out["keys"].([]any)) != 1 {
			t.Fatalf("a revoked key is listed: %v", out)
		}
		for _, a := range []string{"rotate", "enable", "disable", "revoke"} {
			if code, out = call(t, h, "POST", "/admin/keys/team-a/"+a, ""); code != 404 || !strings.Contains(errMsg(out), "revoked") {
				t.Fatalf("%s after revoke: %d %v", a, code, out)
			}
		}
		if code, _ = call(t, h, "GET", "/admin/keys/team-a", ""); code != 404 {
			t.Fatalf("show after revoke: %d", code)
		}
		// The name can be used again, by a new key with a new secret.
		if code, out = call(t, h, "POST", "/admin/keys", `{"name":"team-a"}`); code != 201 || out["secret"] == secret {
			t.Fatalf("create over a revoked name: %d %v", code, out)
		}
	})
}

// Each refusal, with its status and what its message must say.
func TestAPIRefusals(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		h := testAPI(s).Handler()
		if code, out := call(t, h, "POST", "/admin/keys", `{"name":"live"}`); code != 201 {
			t.Fatalf("create: %d %v", code, out)
		}
		past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		for _, c := range []struct {
			name, method, path, body string
			code                     int
			says                     string
		}{
			{"shadow a config key", "POST", "/admin/keys", `{"name":"cfg"}`, 409, "cannot shadow"},
			{"rotate a config key", "POST", "/admin/keys/cfg/rotate", ``, 409, "config file"},
			{"revoke a config key", "POST", "/admin/keys/cfg/revoke", ``, 409, "config file"},
			{"disable a config key", "POST", "/admin/keys/cfg/disable", ``, 409, "config file"},
			{"exists", "POST", "/admin/keys", `{"name":"live"}`, 409, "exists"},
			{"unknown key", "POST", "/admin/keys/nobody/rotate", ``, 404, "no key"},
			{"show unknown", "GET", "/admin/keys/nobody", ``, 404, "no key"},
			{"no name", "POST", "/admin/keys", `{}`, 400, "name is missing"},
			{"limit 0", "POST", "/admin/keys", `{"name":"z","limits":{"rpm":0}}`, 400, "leave it out for no limit"},
			{"limit negative", "POST", "/admin/keys", `{"name":"z","limits":{"itpm":-5}}`, 400, "above 0"},
			{"limit huge", "POST", "/admin/keys", `{"name":"z","limits":{"rpm":1e400}}`, 400, "not a number"},
			// A count that is not whole is refused, never read as 0 (no
			// limit) or cut to 2, as the config file refuses it.
			{"rpm fractional", "POST", "/admin/keys", `{"name":"z","limits":{"rpm":0.9}}`, 400, "limits.rpm: want a whole number, got number 0.9"},
			{"itpm fractional", "POST", "/admin/keys", `{"name":"z","limits":{"itpm":2.5}}`, 400, "limits.itpm: want a whole number"},
			{"otpm fractional", "POST", "/admin/keys", `{"name":"z","limits":{"otpm":0.9}}`, 400, "limits.otpm: want a whole number"},
			{"burst 0", "POST", "/admin/keys", `{"name":"z","limits":{"rpm":5,"burst":"0s"}}`, 400, "burst"},
			{"unknown model", "POST", "/admin/keys", `{"name":"z","models":["gpt-9"]}`, 400, `"gpt-9" is not one this gateway serves`},
			{"bad priority", "POST", "/admin/keys", `{"name":"z","priority":"urgent"}`, 400, "critical, interactive or background"},
			{"expired", "POST", "/admin/keys", `{"name":"z","expires_at":"` + past + `"}`, 400, "not in the future"},
			{"expiry not a time", "POST", "/admin/keys", `{"name":"z","expires_at":"tomorrow"}`, 400, "RFC 3339"},
			{"unknown field", "POST", "/admin/keys", `{"name":"z","colour":"red"}`, 400, `unknown field "colour"`},
			{"unknown nested field", "POST", "/admin/keys", `{"name":"z","limits":{"rpd":5}}`, 400, `unknown field "rpd"`},
			{"sha256 given", "POST", "/admin/keys", `{"name":"z","sha256":"00"}`, 400, "not yours to set"},
			{"wrong type", "POST", "/admin/keys", `{"name":"z","models":"a"}`, 400, "wrong type"},
			{"not an object", "POST", "/admin/keys", `[1]`, 400, "one JSON object"},
			{"trailing data", "POST", "/admin/keys", `{"name":"z"} {}`, 400, "nothing after"},
			{"control character", "POST", "/admin/keys", `{"name":"a\u0000b"}`, 400, `"a\x00b" is not allowed`},
			{"escape sequence", "POST", "/admin/keys", `{"name":"a\u001b[31mred"}`, 400, `"a\x1b[31mred"`},
			{"odd bytes", "POST", "/admin/keys", "{\"name\":\"caf\xc3\xa9\"}", 400, `"caf\u00e9" is not allowed`},
			{"over-long", "POST", "/admin/keys", `{"name":"` + strings.Repeat("x", 65) + `"}`, 400, "1 to 64"},
			{"slash", "POST", "/admin/keys", `{"name":"a/b"}`, 400, "not allowed"},
			{"odd team", "POST", "/admin/keys", `{"name":"z","team":"a b"}`, 400, `team "a b"`},
			{"odd name in path", "GET", "/admin/keys/a%01b", ``, 400, `"a\x01b"`},
			{"unknown action", "POST", "/admin/keys/live/explode", ``, 404, "rotate"},
			{"grace negative", "POST", "/admin/keys/live/rotate", `{"grace":"-1m"}`, 400, "from 0s"},
			{"grace too long", "POST", "/admin/keys/live/rotate", `{"grace":"9999h"}`, 400, "720h"},
			{"revoke with a body", "POST", "/admin/keys/live/revoke", `{"grace":"1m"}`, 400, "no body"},
			{"body too large", "POST", "/admin/keys", `{"name":"z","models":["` + strings.Repeat("a", MaxBody) + `"]}`, 413, "KiB"},
		} {
			code, out := call(t, h, c.method, c.path, c.body)
			if code != c.code || !strings.Contains(errMsg(out), c.says) {
				t.Errorf("%s: %d %q, want %d saying %q", c.name, code, errMsg(out), c.code, c.says)
			}
		}
		if got := len(s.Snapshot().Records); got != 1 {
			t.Errorf("refused requests left %d records, want 1", got)
		}
	})
}

// Without admin.token_env the key API is off (403, saying what to set);
// without a store it lists the config's keys but makes none.
func TestAPIWithoutTokenOrStore(t *testing.T) {
	a := testAPI(nil)
	a.Guarded = false
	for _, p := range []string{"/admin/keys", "/admin/keys/cfg"} {
		code, out := call(t, a.Handler(), "GET", p, "")
		if code != 403 || !strings.Contains(errMsg(out), "admin.token_env") {
			t.Errorf("GET %s without a token: %d %v", p, code, out)
		}
	}
	if code, out := call(t, a.Handler(), "POST", "/admin/keys", `{"name":"x"}`); code != 403 {
		t.Errorf("create without a token: %d %v", code, out)
	}
	a.Guarded = true
	code, out := call(t, a.Handler(), "POST", "/admin/keys", `{"name":"x"}`)
	if code != 409 || !strings.Contains(errMsg(out), "store:") || !strings.Contains(errMsg(out), "state.dir") {
		t.Errorf("create without a store: %d %v", code, out)
	}
	if code, out = call(t, a.Handler(), "GET", "/admin/keys", ""); code != 200 || len(out["keys"].([]any)) != 1 {
		t.Errorf("list without a store: %d %v", code, out)
	}
}

// A rotation racing a revocation never leaves a working secret: whoever
// wins, the key ends revoked, and a rotation that lost says so.
func TestRotateRacesRevoke(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		h := testAPI(s).Handler()
		for i := range 20 {
			name := "race-" + string(rune('a'+i))
			if code, out := call(t, h, "POST", "/admin/keys", `{"name":"`+name+`"}`); code != 201 {
				t.Fatalf("create: %d %v", code, out)
			}
			var wg sync.WaitGroup
			var rotated map[string]any
			var rotCode int
			wg.Add(3)
			go func() {
				defer wg.Done()
				rotCode, rotated = call(t, h, "POST", "/admin/keys/"+name+"/rotate", `{"grace":"1h"}`)
			}()
			go func() { defer wg.Done(); call(t, h, "POST", "/admin/keys/"+name+"/revoke", "") }()
			go func() { defer wg.Done(); call(t, h, "POST", "/admin/keys/"+name+"/rotate", `{"grace":"1h"}`) }()
			wg.Wait()
			rec := s.Snapshot().Records[name]
			if !rec.Revoked {
				t.Fatalf("%s: after rotate racing revoke the key is not revoked: %+v", name, rec)
			}
			if rec.OldSHA256 != "" {
				t.Fatalf("%s: a revoked key keeps an old secret in grace: %+v", name, rec)
			}
			if rotCode != 200 && rotCode != 404 {
				t.Fatalf("%s: rotate answered %d %v", name, rotCode, rotated)
			}
		}
	})
}

// downStore is a store whose backend cannot be reached: every change
// fails as a Redis client's does.
type downStore struct{}

func (downStore) Snapshot() *Snapshot { return &Snapshot{Loaded: true, Records: map[string]*Record{}} }
func (downStore) Apply(context.Context, string, Change) (*Record, error) {
	return nil, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}
func (downStore) Where() string { return "redis sluice:keys" }
func (downStore) Close() error  { return nil }

// A change the store cannot take is a 503 that says so in general
// terms: the store's error names a socket address, which goes to the
// log only (SECURITY.md: error messages disclose no addresses).
func TestStoreDownNamesNoAddress(t *testing.T) {
	var logs strings.Builder
	a := testAPI(downStore{})
	a.Log = slog.New(slog.NewTextHandler(&logs, nil))
	code, out := call(t, a.Handler(), "POST", "/admin/keys", `{"name":"team-a"}`)
	msg := errMsg(out)
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, "nothing changed") || strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "dial") {
		t.Fatalf("%d %q; want 503 saying nothing changed, with no address or dial error", code, msg)
	}
	if !strings.Contains(logs.String(), "dial tcp 127.0.0.1:6379") {
		t.Errorf("the log does not have the store's error: %s", logs.String())
	}
}
