package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sluice serve --check on native providers (gemini, bedrock) says the
// configuration is fine, or what is wrong, without printing a
// credential: not the Gemini key, not an AWS secret, not a credentials
// file's contents.
func TestServeCheckNativeProvidersPrintNoCredentials(t *testing.T) {
	const key, secret, fileSecret = "gem-key-0123456789-do-not-print", "aws-secret-ABCDEFGHIJ-do-not-print", "private-key-CONTENTS-do-not-print"
	dir := t.TempDir()
	creds := filepath.Join(dir, "sa.json")
	if err := os.WriteFile(creds, []byte(`{"type":"service_account","private_key":"`+fileSecret+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_TEST_GEMINI_KEY", key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE")
	good := `providers:
  - name: gem
    kind: gemini
    api_key_env: SLUICE_TEST_GEMINI_KEY
  - name: vertex
    kind: gemini
    vertex: {project: my-project, location: europe-west4, credentials_file: ` + creds + `}
  - name: rock
    kind: bedrock
    region: us-east-1
models:
  - name: m
    targets: [{provider: gem, model: gemini-2.5-flash}, {provider: vertex, model: gemini-2.5-pro}, {provider: rock, model: anthropic.claude-sonnet-4}]
`
	bad := strings.Replace(good, "region: us-east-1", "region: virginia\n    api_key_env: AWS_SECRET_ACCESS_KEY", 1)
	bad = strings.Replace(bad, "api_key_env: SLUICE_TEST_GEMINI_KEY", "api_key_env: SLUICE_TEST_GEMINI_KEY\n    headers: {x-goog-api-key: "+key+"}", 1)
	for _, c := range []struct {
		name, yaml string
		code       int
		mentions   []string
	}{
		{"valid", good, 0, []string{"configuration ok: 3 providers"}},
		{"invalid", bad, 2, []string{"providers[2].region", "providers[2].api_key_env", "providers[0].headers.x-goog-api-key"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name+".yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			out := expectExit(t, Main, []string{"serve", "--check", "--config", p}, c.code, c.mentions)
			for _, s := range []string{key, secret, fileSecret} {
				if strings.Contains(out, s) {
					t.Errorf("serve --check printed a credential:\n%s", out)
				}
			}
		})
	}
}
