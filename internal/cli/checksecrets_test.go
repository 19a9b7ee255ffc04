package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve --check --time-scale prints the configuration it would run, for
// terminals, CI logs and bug reports; the secrets in it do not appear:
// values taken from the environment are named ${NAME} again, header
// values and a store URL's password are blanked.
func TestServeCheckPrintsNoSecrets(t *testing.T) {
	const (
		key       = "sk-provider-secret-0123456789"
		header    = "hdr-secret-abcdef"
		literal   = "literal-header-secret-xyz"
		collector = "collector-token-98765"
		redisPass = "redis-pass-4242"
	)
	t.Setenv("CHECK_PROVIDER_KEY", key)
	t.Setenv("CHECK_HEADER", header)
	t.Setenv("CHECK_COLLECTOR", collector)
	t.Setenv("CHECK_REDIS_PASS", redisPass)
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	os.WriteFile(file, []byte(`
providers:
  - name: p
    kind: openai
    base_url: http://127.0.0.1:8000/v1
    api_key_env: CHECK_PROVIDER_KEY
    headers:
      X-Project: ${CHECK_HEADER}
      X-Literal: `+literal+`
models:
  - name: chat
    targets: [{provider: p, model: m}]
store: redis://:${CHECK_REDIS_PASS}@127.0.0.1:6390/0
tracing:
  endpoint: http://127.0.0.1:4318
  headers:
    Authorization: Bearer ${CHECK_COLLECTOR}
`), 0o600)
	all := expectExit(t, Serve, []string{"--check", "--config", file, "--time-scale", "0.5"}, 0, []string{"time scale 0.5", "[redacted]", "CHECK_PROVIDER_KEY"})
	for _, s := range []string{key, header, literal, collector, redisPass} {
		if strings.Contains(all, s) {
			t.Errorf("the printed configuration shows the secret %q:\n%s", s, all)
		}
	}
	if !strings.Contains(all, "127.0.0.1:6390") {
		t.Errorf("the store's address is gone too:\n%s", all)
	}
}
