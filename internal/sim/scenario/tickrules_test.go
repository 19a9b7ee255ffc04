package scenario

import (
	"strings"
	"testing"
)

func TestTickRules(t *testing.T) {
	const base = `providers:
  - {name: llm, kind: openai, base_url: "http://127.0.0.1:8001/v1"}
models:
  - {name: chat, targets: [{provider: llm, model: chat}]}
scenario:
  duration: 10s
  clients: {model: chat, rate: [{at: 0s, rps: 1}]}
  upstreams:
    llm: {ttft: 1s}
`
	for _, c := range []struct {
		extra, err string
		seed       bool
	}{
		{"", "", false},
		{"  tick: 100ms\n", "", false},
		{"  tick: 100ms\n  tick_rules: exact\n", "", false},
		{"  tick: 100ms\n  tick_rules: seed\n", "", true},
		{"  tick_rules: seed\n", "tick_rules: seed needs a tick", false},
		{"  tick: 100ms\n  tick_rules: js\n", `tick_rules: "js"`, false},
	} {
		f, err := Parse([]byte(base+c.extra), "t.yaml")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one saying %q", c.extra, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.extra, err)
		}
		if f.Scenario.SeedRules() != c.seed {
			t.Errorf("%q: SeedRules %v", c.extra, f.Scenario.SeedRules())
		}
	}
}
