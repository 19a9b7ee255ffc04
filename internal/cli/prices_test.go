package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
)

// sluice prices lists the shipped table, dated, and a config's prices
// over it, each row with its source.
func TestPricesCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte(`providers: [{name: p, kind: openai, base_url: 'http://127.0.0.1:1/v1'}]
models: [{name: m, targets: [{provider: p, model: my-llama}]}]
prices:
  gpt-4o: {input: 2, cached_input: 1, output: 9}
  my-llama: {input: 0.1, output: 0.2}
`), 0o600)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"prices"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, _ := run()
	if code != 0 || !strings.Contains(out, "compiled "+config.ShippedPrices().Compiled) || !strings.Contains(out, "pricing page") {
		t.Fatalf("sluice prices: %d\n%s", code, out)
	}
	row := func(out, model string) []string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == model {
				return f
			}
		}
		return nil
	}
	if f := row(out, "gpt-4o"); strings.Join(f, " ") != "gpt-4o 2.50 1.25 10.00 shipped" {
		t.Errorf("gpt-4o row: %q", f)
	}
	code, out, _ = run("--config", cfg)
	if code != 0 {
		t.Fatalf("with --config: %d\n%s", code, out)
	}
	if f := row(out, "gpt-4o"); strings.Join(f, " ") != "gpt-4o 2.00 1.00 9.00 config" {
		t.Errorf("gpt-4o overridden: %q", f)
	}
	if f := row(out, "my-llama"); strings.Join(f, " ") != "my-llama 0.10 = input 0.20 config" {
		t.Errorf("my-llama: %q", f)
	}
	code, out, _ = run("--config", cfg, "--json")
	var j struct {
		Compiled string `json:"shipped_compiled"`
		Models   []struct {
			Model, Source              string
			Input, CachedInput, Output float64
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(out), &j); code != 0 || err != nil || j.Compiled == "" {
		t.Fatalf("--json: %d %v\n%s", code, err, out)
	}
	found := false
	for _, m := range j.Models {
		if m.Model == "my-llama" {
			found = m.Source == "config" && m.Input == 0.1 && m.Output == 0.2
		}
	}
	if !found {
		t.Errorf("--json: my-llama missing or wrong:\n%s", out)
	}
	if code, _, errs := run("--config", filepath.Join(dir, "nope.yaml")); code != 2 || !strings.Contains(errs, "nope.yaml") {
		t.Errorf("a missing file: %d %q", code, errs)
	}
	if code, _, errs := run("--help"); code != 0 || !strings.Contains(errs, "usage: sluice prices") {
		t.Errorf("--help: %d %q", code, errs)
	}
}

// serve --check says when usage records will not outlive the process.
func TestServeCheckNotesMemoryOnlyUsage(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if code := Main([]string{"serve", "--check"}, &out, &out); code != 0 || !strings.Contains(out.String(), "usage records are kept in memory only") {
		t.Errorf("embedded default: %d\n%s", code, out.String())
	}
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("providers: [{name: p, kind: openai, base_url: 'http://127.0.0.1:1/v1'}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\nstate: {dir: "+dir+"}\n"), 0o600)
	out.Reset()
	if code := Main([]string{"serve", "--check", "--config", cfg}, &out, &out); code != 0 || strings.Contains(out.String(), "memory only") {
		t.Errorf("with state.dir: %d\n%s", code, out.String())
	}
}
