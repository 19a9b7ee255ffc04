package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// serve --config SCENARIO --policy NAME serves that policy's gateway
// config; --policy anywhere else is refused with what to do instead.
func TestServePolicy(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	plain := filepath.Join(t.TempDir(), "plain.yaml")
	if err := os.WriteFile(plain, []byte(`providers:
  - name: p
    kind: openai
    base_url: http://127.0.0.1:1/v1
models:
  - name: m
    targets: [{provider: p, model: x}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		args     []string
		code     int
		mentions []string
	}{
		// --time-scale makes --check print the config it would serve:
		// "before" lifts the admission cap to 100000.
		{"a policy of the scenario", []string{"--check", "--config", "../../scenarios/seed-002.yaml", "--policy", "before", "--time-scale", "0.5"}, 0,
			[]string{"configuration ok", "max_in_flight: 100000"}},
		{"an unknown policy", []string{"--check", "--config", "../../scenarios/seed-002.yaml", "--policy", "nope"}, 2,
			[]string{`has no policy "nope"`, `"before", "after", "beyond"`}},
		{"a scenario without policies", []string{"--check", "--config", "../harness/loadgen/testdata/basic.yaml", "--policy", "after"}, 2,
			[]string{"has no policies; drop --policy"}},
		{"a plain gateway config", []string{"--check", "--config", plain, "--policy", "after"}, 2,
			[]string{"is a gateway config, not a scenario file"}},
		{"no config", []string{"--check", "--policy", "after"}, 2, []string{"--policy after needs --config SCENARIO"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			expectExit(t, Serve, c.args, c.code, c.mentions)
		})
	}
	// Without --time-scale, --check prints no config: read it directly.
	cfg, err := loadConfig("../../scenarios/seed-002.yaml", "before")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Admission.MaxInFlight != 100000 {
		t.Errorf("policy before: admission.max_in_flight %d, want its overlay's 100000", cfg.Admission.MaxInFlight)
	}
	if cfg, err = loadConfig("../../scenarios/seed-002.yaml", ""); err != nil || cfg.Admission.MaxInFlight != 258 {
		t.Errorf("no policy: admission.max_in_flight %v (%v), want the file's 258", cfg.Admission.MaxInFlight, err)
	}
}
