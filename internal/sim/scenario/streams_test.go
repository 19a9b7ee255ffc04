package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/model/workload"
)

// streamsFile is a scenario with two keys and two streams; each case
// replaces one line of it.
const streamsFile = `providers:
  - {name: llm, kind: openai, base_url: "http://127.0.0.1:8001/v1"}
models:
  - {name: chat, targets: [{provider: llm, model: m}]}
  - {name: small, targets: [{provider: llm, model: s}]}
keys:
  - {name: tenant-a, sha256: HASH_A}
  - {name: tenant-b, sha256: HASH_B, priority: background, models: [chat]}
scenario:
  seed: 1
  duration: 10s
  keys: {tenant-a: sk-sim-tenant-a, tenant-b: sk-sim-tenant-b}
  clients:
    key: tenant-a
    model: chat
    rate: [{at: 0s, rps: 5}]
    prompt_tokens: 100-200
    max_tokens: 64
    patience: 5s
    streams:
      - {name: b, key: tenant-b, rate: [{at: 0s, rps: 2}], max_tokens: 0}
      - {name: big, key: tenant-a, model: small, prompt_tokens: 20000, arrivals: poisson}
  upstreams:
    llm: {}
`

func streamsYAML(replace ...string) string {
	s := strings.NewReplacer("HASH_A", config.KeyHash("sk-sim-tenant-a"), "HASH_B", config.KeyHash("sk-sim-tenant-b")).Replace(streamsFile)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			panic("streamsYAML: no " + replace[i])
		}
		s = strings.Replace(s, replace[i], replace[i+1], 1)
	}
	return s
}

func TestStreamsResolve(t *testing.T) {
	f, err := Parse([]byte(streamsYAML()), "streams.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all := f.Scenario.Clients.All()
	if len(all) != 3 {
		t.Fatalf("%d streams, want 3", len(all))
	}
	m, b, big := all[0], all[1], all[2]
	if m.Name != MainStream || m.Key != "tenant-a" || m.Streams != nil {
		t.Errorf("main stream %+v", m)
	}
	// b overrides rate and max_tokens (to none), inherits the rest.
	if b.Name != "b" || b.Key != "tenant-b" || b.Rate[0].RPS != 2 || b.MaxTokens != 0 || b.Model != "chat" ||
		b.PromptTokens != (upstream.TokenRange{Min: 100, Max: 200}) || b.Patience != 5*time.Second {
		t.Errorf("stream b %+v", b)
	}
	if big.Model != "small" || big.Rate[0].RPS != 5 || big.MaxTokens != 64 || big.Prompt() != (workload.Sizes{Min: 20000, Max: 20000}) ||
		big.Arrivals != "poisson" {
		t.Errorf("stream big %+v", big)
	}
	if (Clients{}).Prompt() != (workload.Sizes{Min: DefaultPromptTokens, Max: DefaultPromptTokens}) {
		t.Error("default prompt")
	}
}

func TestStreamsValidate(t *testing.T) {
	for _, c := range []struct {
		name    string
		replace []string
		want    string
	}{
		{"unknown key", []string{"{name: b, key: tenant-b", "{name: b, key: tenant-c"},
			`scenario.clients.streams[0].key: "tenant-c" is not a key of the gateway config (keys[].name); known keys: tenant-a, tenant-b`},
		{"main unknown key", []string{"    key: tenant-a\n", "    key: nobody\n"},
			`scenario.clients.key: "nobody" is not a key`},
		{"unknown model", []string{"model: small", "model: large"},
			`scenario.clients.streams[1].model: "large" is not a model of the gateway config; known models: chat, small`},
		{"duplicate names", []string{"name: big", "name: b"},
			`scenario.clients.streams[1].name: "b" is already the name of clients.streams[0]`},
		{"clashes with main", []string{"name: big", "name: main"},
			`scenario.clients.streams[1].name: "main" is already the name of clients`},
		{"missing name", []string{"{name: big, ", "{"},
			"scenario.clients.streams[1].name: missing"},
		{"no key but auth", []string{"{name: big, key: tenant-a, ", "{name: big, "},
			"scenario.clients.streams[1].key: missing; the gateway config defines keys, so it refuses requests without one (401)"},
		{"key may not use model", []string{"{name: b, key: tenant-b, ", "{name: b, key: tenant-b, model: small, "},
			`scenario.clients.streams[0].key: key "tenant-b" may not use model "small" (its models: chat)`},
		{"bad hash", []string{"tenant-b: sk-sim-tenant-b}", "tenant-b: sk-sim-tenant-x}"},
			`scenario.keys.tenant-b: its SHA-256 is not keys[].sha256 of key "tenant-b"`},
		{"plaintext for no key", []string{"tenant-b: sk-sim-tenant-b}", "tenant-b: sk-sim-tenant-b, tenant-c: x}"},
			"scenario.keys.tenant-c: not a key of the gateway config"},
		{"bad rate", []string{"rate: [{at: 0s, rps: 2}]", "rate: [{at: 0s, rps: -2}]"},
			"scenario.clients.streams[0].rate[0]: rps must be >= 0"},
		{"bad priority", []string{"arrivals: poisson}", "arrivals: poisson, priorities: {urgent: 1}}"},
			"scenario.clients.streams[1].priorities.urgent: use critical, interactive or background"},
		{"bad arrivals", []string{"arrivals: poisson", "arrivals: bursty"},
			`scenario.clients.streams[1].arrivals: "bursty"; use even or poisson`},
		{"negative max_tokens", []string{"max_tokens: 0}", "max_tokens: -1}"},
			"scenario.clients.streams[0].max_tokens: -1 is negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(streamsYAML(c.replace...)), "streams.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}
