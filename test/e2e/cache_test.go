package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
)

// One mock, a model of each API with the cache on, and three keys: two
// of one tenant, one of another.
const cacheConfig = `listen: ${LISTEN}
admin_listen: ${ADMIN}
providers:
  - {name: ant, kind: anthropic, base_url: "http://${UP}/v1", breaker: off}
  - {name: oai, kind: openai, base_url: "http://${UP}/v1", breaker: off}
models:
  - {name: claude-cached, targets: [{provider: ant, model: claude-x}], cache: {ttl: 10m}}
  - {name: gpt-cached, targets: [{provider: oai, model: gpt-x}], cache: {ttl: 10m}}
keys:
  - {name: a, tenant: ta, sha256: ${A}}
  - {name: a2, tenant: ta, sha256: ${A2}}
  - {name: b, tenant: tb, sha256: ${B}}
`

// The response cache in real processes, through the official Node SDKs,
// unchanged: the second identical request is a hit with no upstream
// call, whole and streamed, in both APIs; another key of the same
// tenant hits, another tenant misses; a streamed answer answers a whole
// request; a no-store request is never stored. The mock counts the
// calls that reached it: six per API (the first question, the other
// tenant's, the streamed second question, and the third question three
// times), where every request without the cache would make thirteen.
func TestSDKCache(t *testing.T) {
	needNode(t)
	bin := buildSluice(t)
	listen, admin, up := freeAddr(t), freeAddr(t), freeAddr(t)
	start(t, ready("http://"+up+"/stats"), bin, "mock", "--listen", up, "--ttft", "5ms", "--tpot", "1ms", "--output-tokens", "8")
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	cfg := strings.NewReplacer("${LISTEN}", listen, "${ADMIN}", admin, "${UP}", up,
		"${A}", config.KeyHash("sk-cache-a"), "${A2}", config.KeyHash("sk-cache-a2"), "${B}", config.KeyHash("sk-cache-b")).Replace(cacheConfig)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := start(t, ready("http://"+admin+"/readyz"), bin, "serve", "--config", path)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sluice serve's log:\n%s", serve.Output())
		}
	})
	calls := func() int64 {
		resp, err := http.Get("http://" + up + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct {
			Total int64 `json:"total"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.Total
	}
	for _, c := range []struct{ api, model string }{{"openai", "gpt-cached"}, {"anthropic", "claude-cached"}} {
		t.Run(c.api, func(t *testing.T) {
			before := calls()
			out, err := runNode(t, "cache.mjs", []string{"SLUICE_URL=http://" + listen, "SLUICE_API=" + c.api, "SLUICE_MODEL=" + c.model}, 60*time.Second)
			t.Logf("node cache.mjs:\n%s", out)
			if err != nil {
				t.Fatalf("node cache.mjs: %v", err)
			}
			if n := strings.Count(out, "\nok ") + boolInt(strings.HasPrefix(out, "ok ")); n != 6 {
				t.Errorf("%d steps passed; want 6", n)
			}
			if got := calls() - before; got != 6 {
				t.Errorf("the provider saw %d calls; want 6 (the rest answered from the cache)", got)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
