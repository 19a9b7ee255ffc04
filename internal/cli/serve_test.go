package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		mentions []string
	}{
		{"embedded default", []string{"serve", "--check"}, 0, []string{"configuration ok"}},
		{"example config", []string{"serve", "--check", "--config", "../../examples/sluice.yaml"}, 0, []string{"configuration ok"}},
		{"example config without its keys", []string{"serve", "--check", "--config", "../../examples/sluice.yaml"}, 2,
			[]string{"OPENAI_API_KEY is not set", "sluice.yaml:"}},
		{"address overrides", []string{"serve", "--check", "--listen", "127.0.0.1:18080", "--admin-listen", "127.0.0.1:18080"}, 2,
			[]string{"same address as listen"}},
		{"version", []string{"version"}, 0, []string{"sluice ", "go1."}},
		{"missing file", []string{"serve", "--check", "--config", filepath.Join(dir, "nope.yaml")}, 2, []string{"nope.yaml"}},
		{"not yaml", []string{"serve", "--check", "--config", write("bad.yaml", "providers: [\n")}, 2, []string{"bad.yaml"}},
		{"bad duration", []string{"serve", "--check", "--config", write("dur.yaml", `providers:
  - name: p
    kind: openai
    base_url: http://127.0.0.1:1/v1
    timeout: 15
models:
  - name: m
    targets: [{provider: p, model: x}]
`)}, 2, []string{"dur.yaml:5", "providers[0].timeout", "15s"}},
		{"unknown key", []string{"serve", "--check", "--config", write("key.yaml", `providers:
  - name: p
    kind: openai
    base_url: http://127.0.0.1:1/v1
    timout: 15s
models:
  - name: m
    targets: [{provider: p, model: x}]
`)}, 2, []string{"key.yaml:5", "timout"}},
		{"unknown command", []string{"serv"}, 2, []string{"unknown command"}},
		{"stray argument", []string{"serve", "extra"}, 2, []string{"unexpected argument"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "example config" {
				t.Setenv("OPENAI_API_KEY", "sk-test")
				t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
			} else {
				t.Setenv("OPENAI_API_KEY", "")
			}
			expectExit(t, Main, c.args, c.code, c.mentions)
		})
	}
}

// expectExit runs a command's entry point with args and requires its exit
// code, and each of mentions somewhere in what it printed, which it
// returns.
func expectExit(t *testing.T, run func(args []string, stdout, stderr io.Writer) int, args []string, code int, mentions []string) string {
	t.Helper()
	var out, errb bytes.Buffer
	got := run(args, &out, &errb)
	all := out.String() + errb.String()
	if got != code {
		t.Fatalf("exit %d, want %d\n%s", got, code, all)
	}
	for _, m := range mentions {
		if !strings.Contains(all, m) {
			t.Errorf("output does not mention %q:\n%s", m, all)
		}
	}
	return all
}
