package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

const adminTokenEnv = "SLUICE_TEST_ADMIN_TOKEN"

// keyStores runs f with a config mutation for each key store: state.dir
// (a fresh directory) and Redis (a fresh prefix, deleted at the end).
func keyStores(t *testing.T, f func(t *testing.T, store func(*config.Config))) {
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		f(t, func(c *config.Config) { c.State.Dir = dir })
	})
	t.Run("redis", func(t *testing.T) {
		f(t, redisKeyStore(t))
	})
}

// redisKeyStore is a config mutation that puts keys (and the fleet) in
// the test Redis under a prefix of the test's own, deleted at its end.
func redisKeyStore(t *testing.T) func(*config.Config) {
	addr := redistest.Addr(t)
	prefix := fmt.Sprintf("sluicetest:keys:%d:", rand.Uint64())
	t.Cleanup(func() {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	})
	return func(c *config.Config) {
		c.Store = "redis://" + addr + "/0"
		c.Fleet.Prefix = prefix
		c.Fleet.Timeout = config.Duration(200 * time.Millisecond)
	}
}

// keyHost is a host with the admin token set, its keys where store puts
// them.
func keyHost(t *testing.T, store func(*config.Config), mutate func(*config.Config)) *hostStack {
	t.Helper()
	t.Setenv(adminTokenEnv, "test-admin-token")
	return newHostStack(t, mock.Config{}, func(c *config.Config) {
		c.Admin.TokenEnv = adminTokenEnv
		if store != nil {
			store(c)
		}
		if mutate != nil {
			mutate(c)
		}
	})
}

// admin calls the key API with the admin token.
func (hs *hostStack) adminCall(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, hs.admin+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer test-admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %q", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

// create makes a key and returns its secret.
func (hs *hostStack) create(t *testing.T, body string) string {
	t.Helper()
	code, out := hs.adminCall(t, "POST", "/admin/keys", body)
	if code != http.StatusCreated {
		t.Fatalf("create %s: %d %v", body, code, out)
	}
	return out["secret"].(string)
}

// send sends a chat request with key and returns its status and body.
func (hs *hostStack) send(t *testing.T, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", hs.url+"/v1/chat/completions", strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// models is GET /v1/models's status with key: the cheapest authenticated
// request.
func (hs *hostStack) models(t *testing.T, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", hs.url+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// A key made at run time works as a config key does (its model list,
// its limits, its name in the metrics), and each change to it is in
// force from the next request: disabled, enabled, rotated with and
// without a grace, expired, revoked; each refusal says which.
func TestRuntimeKeys(t *testing.T) {
	keyStores(t, func(t *testing.T, store func(*config.Config)) {
		hs := keyHost(t, store, func(c *config.Config) {
			c.Keys = []config.Key{{Name: "cfg", SHA256: config.KeyHash("sk-cfg")}}
		})
		secret := hs.create(t, `{"name":"team-a","team":"search","models":["mock-gpt"],"limits":{"rpm":2,"burst":"60s"}}`)
		if code, body := hs.send(t, secret, chatBody); code != 200 {
			t.Fatalf("a new key's request: %d %s", code, body)
		}
		claude := `{"model":"mock-claude","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
		if code, body := hs.send(t, secret, claude); code != 403 || !strings.Contains(body, "may not use model") {
			t.Errorf("a model outside the key's list: %d %s", code, body)
		}
		if code, body := hs.send(t, secret, chatBody); code != 200 {
			t.Fatalf("second request: %d %s", code, body)
		}
		if code, body := hs.send(t, secret, chatBody); code != 429 || !strings.Contains(body, "budget") {
			t.Errorf("third request past rpm 2 with a burst of 2: %d %s", code, body)
		}
		metrics := httpGetAdminURL(t, hs.admin+"/metrics")
		if !strings.Contains(metrics, `key="team-a"`) {
			t.Error("the metrics do not label the key's requests with its name")
		}
		if !strings.Contains(metrics, `name="team-a",owner="key"`) {
			t.Error("the metrics do not show the key's budget under its name")
		}
		if code, _ := hs.send(t, "sk-cfg", chatBody); code != 200 {
			t.Errorf("the config key: %d", code)
		}

		other := hs.create(t, `{"name":"team-b"}`)
		steps := []struct {
			action, body string
			status       int
			says         string
		}{
			{"disable", "", 401, "key team-b is disabled"},
			{"enable", "", 200, ""},
		}
		for _, s := range steps {
			if code, out := hs.adminCall(t, "POST", "/admin/keys/team-b/"+s.action, s.body); code != 200 {
				t.Fatalf("%s: %d %v", s.action, code, out)
			}
			if code, body := hs.send(t, other, chatBody); code != s.status || !strings.Contains(body, s.says) {
				t.Errorf("after %s: %d %s, want %d saying %q", s.action, code, body, s.status, s.says)
			}
		}
		// Rotated with a grace, both secrets work; without, the old stops.
		code, out := hs.adminCall(t, "POST", "/admin/keys/team-b/rotate", `{"grace":"10m"}`)
		if code != 200 {
			t.Fatalf("rotate: %d %v", code, out)
		}
		next := out["secret"].(string)
		for _, k := range []string{other, next} {
			if code, body := hs.send(t, k, chatBody); code != 200 {
				t.Errorf("during the grace: %d %s", code, body)
			}
		}
		code, out = hs.adminCall(t, "POST", "/admin/keys/team-b/rotate", `{}`)
		third := out["secret"].(string)
		if code, body := hs.send(t, next, chatBody); code != 401 {
			t.Errorf("the old secret after a rotation without grace: %d %s", code, body)
		}
		if code, body := hs.send(t, third, chatBody); code != 200 {
			t.Errorf("the new secret: %d %s", code, body)
		}
		if code, out := hs.adminCall(t, "POST", "/admin/keys/team-b/revoke", ""); code != 200 {
			t.Fatalf("revoke: %d %v", code, out)
		}
		if code, body := hs.send(t, third, chatBody); code != 401 || !strings.Contains(body, "key team-b was revoked") {
			t.Errorf("a revoked key: %d %s", code, body)
		}

		// Expired: a key whose expiry passes is refused from then on.
		exp := time.Now().Add(1500 * time.Millisecond).UTC().Truncate(time.Second).Add(time.Second)
		short := hs.create(t, `{"name":"short","expires_at":"`+exp.Format(time.RFC3339)+`"}`)
		if code, _ := hs.send(t, short, chatBody); code != 200 {
			t.Errorf("before its expiry: %d", code)
		}
		for time.Now().Before(exp) {
			time.Sleep(exp.Sub(time.Now()) + time.Millisecond)
		}
		if code, body := hs.send(t, short, chatBody); code != 401 || !strings.Contains(body, "expired at") {
			t.Errorf("after its expiry: %d %s", code, body)
		}

		// The config's key cannot be changed through the API.
		if code, out := hs.adminCall(t, "POST", "/admin/keys/cfg/revoke", ""); code != 409 {
			t.Errorf("revoke a config key: %d %v", code, out)
		}
		if code, out := hs.adminCall(t, "POST", "/admin/keys", `{"name":"cfg"}`); code != 409 || !strings.Contains(errText(out), "cannot shadow") {
			t.Errorf("shadow a config key: %d %v", code, out)
		}
	})
}

func errText(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// httpGetAdminURL reads an admin URL with the test's admin token.
func httpGetAdminURL(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer test-admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return string(data)
}

// The key API needs the admin token: without admin.token_env it answers
// 403 saying to set it; with it, a missing or wrong token gets 401.
// Without a store or state.dir it makes no key, saying what to set.
func TestRuntimeKeysAdminGuard(t *testing.T) {
	open := newHostStack(t, mock.Config{}, func(c *config.Config) { c.State.Dir = t.TempDir() })
	resp, err := http.Post(open.admin+"/admin/keys", "application/json", strings.NewReader(`{"name":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "admin.token_env") {
		t.Errorf("key API without admin.token_env: %d %s", resp.StatusCode, body)
	}

	hs := keyHost(t, func(c *config.Config) { c.State.Dir = t.TempDir() }, nil)
	for _, tok := range []string{"", "wrong"} {
		req, _ := http.NewRequest("POST", hs.admin+"/admin/keys", strings.NewReader(`{"name":"x"}`))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("token %q: %d, want 401", tok, resp.StatusCode)
		}
	}

	none := keyHost(t, nil, nil)
	code, out := none.adminCall(t, "POST", "/admin/keys", `{"name":"x"}`)
	if code != 409 || !strings.Contains(errText(out), "state.dir") {
		t.Errorf("create without a store: %d %v", code, out)
	}
	if code, _ := none.adminCall(t, "GET", "/admin/keys", ""); code != 200 {
		t.Errorf("list without a store: %d", code)
	}
}

// auth.required's default with a key store: an open gateway stays open
// when its first key is made at run time (the answer warns), and the
// next start over the same store requires keys; auth.required: false
// keeps it open whatever the store holds.
func TestRuntimeKeysAuthDefault(t *testing.T) {
	dir := t.TempDir()
	store := func(c *config.Config) { c.State.Dir = dir }
	hs := keyHost(t, store, nil)
	if code, body := hs.send(t, "", chatBody); code != 200 {
		t.Fatalf("an open gateway: %d %s", code, body)
	}
	code, out := hs.adminCall(t, "POST", "/admin/keys", `{"name":"first"}`)
	if code != 201 || !strings.Contains(fmt.Sprint(out["warning"]), "requests without one still pass") {
		t.Fatalf("first key on an open gateway: %d %v", code, out)
	}
	if code, body := hs.send(t, "", chatBody); code != 200 {
		t.Errorf("the open gateway closed when a key was made: %d %s", code, body)
	}
	if code, _ := hs.send(t, out["secret"].(string), chatBody); code != 200 {
		t.Errorf("the new key on the open gateway: %d", code)
	}

	next := keyHost(t, store, nil)
	if code, body := next.send(t, "", chatBody); code != 401 {
		t.Errorf("a gateway started over a store with keys let in a request without one: %d %s", code, body)
	}
	openAnyway := keyHost(t, store, func(c *config.Config) { f := false; c.Auth.Required = &f })
	if code, _ := openAnyway.send(t, "", chatBody); code != 200 {
		t.Errorf("auth.required: false over a store with keys: %d", code)
	}
}

// Propagation: with two gateways on one Redis, a key revoked through one
// is refused by the other within a second of the revocation's request (announced on the store's
// channel; the version poll bounds it should the announcement be lost).
// The figure is logged.
func TestRuntimeKeysPropagateRedis(t *testing.T) {
	store := redisKeyStore(t)
	a := keyHost(t, store, nil)
	b := keyHost(t, store, nil)
	secret := a.create(t, `{"name":"roaming"}`)
	created := waitStatus(t, b, secret, 200)
	start := time.Now()
	if code, out := a.adminCall(t, "POST", "/admin/keys/roaming/revoke", ""); code != 200 {
		t.Fatalf("revoke: %d %v", code, out)
	}
	waitStatus(t, b, secret, 401)
	revoked := time.Since(start)
	t.Logf("Redis, two gateways: a key made on one worked on the other after %v; revoked on one, refused by the other after %v", created, revoked)
	if revoked > time.Second {
		t.Errorf("revocation took %v to reach the other gateway, want at most 1s", revoked)
	}
}

// Propagation on the file store, one gateway: a revocation is in force
// from the next request.
func TestRuntimeKeysPropagateFile(t *testing.T) {
	hs := keyHost(t, func(c *config.Config) { c.State.Dir = t.TempDir() }, nil)
	secret := hs.create(t, `{"name":"local"}`)
	if code := hs.models(t, secret); code != 200 {
		t.Fatalf("the new key: %d", code)
	}
	start := time.Now()
	if code, out := hs.adminCall(t, "POST", "/admin/keys/local/revoke", ""); code != 200 {
		t.Fatalf("revoke: %d %v", code, out)
	}
	if code := hs.models(t, secret); code != 401 {
		t.Errorf("the request after the revocation's answer: %d, want 401", code)
	}
	revoked := time.Since(start)
	t.Logf("file store, one gateway: revoked, refused after %v", revoked)
	if revoked > time.Second {
		t.Errorf("revocation took %v, want at most 1s", revoked)
	}
}

// waitStatus asks hs's model list with key until it answers want, and
// returns how long that took (failing past 3 s).
func waitStatus(t *testing.T, hs *hostStack, key string, want int) time.Duration {
	t.Helper()
	start := time.Now()
	for hs.models(t, key) != want {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("after 3s the key still does not get %d", want)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

// A gateway whose key store does not answer at start cannot know whether
// keys exist, so without auth.required it refuses requests without a
// key until the store answers, rather than open up; auth.required: false
// serves them anyway.
func TestRuntimeKeysStoreDownAtStart(t *testing.T) {
	down := func(c *config.Config) {
		c.Store = "redis://127.0.0.1:1/0"
		c.Fleet.Timeout = config.Duration(50 * time.Millisecond)
	}
	hs := keyHost(t, down, nil)
	if code, body := hs.send(t, "", chatBody); code != 401 {
		t.Errorf("store down at start, no auth.required: %d %s, want 401", code, body)
	}
	open := keyHost(t, down, func(c *config.Config) { f := false; c.Auth.Required = &f })
	if code, body := open.send(t, "", chatBody); code != 200 {
		t.Errorf("store down at start, auth.required: false: %d %s, want 200", code, body)
	}
}

// Keys changing while requests use them and the metrics are read: no
// race (run with -race), and every answer is one the key's state allows.
func TestRuntimeKeysChangeUnderLoad(t *testing.T) {
	hs := keyHost(t, func(c *config.Config) { c.State.Dir = t.TempDir() }, nil)
	secrets := make(chan string, 64)
	done := make(chan struct{})
	errs := make(chan string, 16)
	go func() {
		defer close(done)
		for s := range secrets {
			for range 3 {
				if code := hs.models(t, s); code != 200 && code != 401 {
					errs <- fmt.Sprintf("a key being changed got %d", code)
				}
			}
			httpGetAdminURL(t, hs.admin+"/metrics")
		}
	}()
	for i := range 15 {
		name := fmt.Sprintf("churn-%d", i)
		s := hs.create(t, `{"name":"`+name+`","limits":{"rpm":1000}}`)
		secrets <- s
		hs.adminCall(t, "POST", "/admin/keys/"+name+"/disable", "")
		hs.adminCall(t, "POST", "/admin/keys/"+name+"/revoke", "")
		if code := hs.models(t, s); code != 401 {
			t.Errorf("%s: revoked, and still %d", name, code)
		}
	}
	close(secrets)
	<-done
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A key made at run time in a team is held to the team's spend limit,
// as the file's keys of that team are: a team with a limit cannot be
// spent past by making it a new key.
func TestRuntimeKeysKeepTheirTeamsSpendLimit(t *testing.T) {
	hs := keyHost(t, func(c *config.Config) { c.State.Dir = t.TempDir() }, func(c *config.Config) {
		c.Teams = []config.Team{{Name: "research", Spend: &config.SpendLimits{Daily: dollars(0.01)}}}
		c.Prices = map[string]config.Price{}
		for _, m := range c.Models {
			for _, tg := range m.Targets {
				c.Prices[tg.Model] = config.Price{Input: 1, Output: 10000} // a cent a token of output
			}
		}
	})
	secret := hs.create(t, `{"name":"made-later","team":"research"}`)
	body := `{"model":"mock-gpt","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	if code, b := hs.send(t, secret, body); code != 200 {
		t.Fatalf("first request, under the team's limit: %d %s", code, b)
	}
	code, b := hs.send(t, secret, body)
	if code != 429 || !strings.Contains(b, `team \"research\"'s daily spend limit`) {
		t.Fatalf("second request, past the team's limit: %d %s; want 429 naming the team's limit", code, b)
	}
}
