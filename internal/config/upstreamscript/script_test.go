package upstreamscript

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/model/upstream"
)

func TestScenarioUpstreamDerivesTheSeed(t *testing.T) {
	const file = `scenario:
  seed: 5
  upstreams:
    vllm: {ttft: 80ms, output_tokens: 10-20}
    fixed: {seed: 9}
`
	a, err := ScenarioUpstream([]byte(file), "vllm")
	if err != nil {
		t.Fatal(err)
	}
	if a.Seed == 0 || a.TTFT != 80*time.Millisecond || a.OutputTokens != (upstream.TokenRange{Min: 10, Max: 20}) || a.TPOT != upstream.DefaultConfig().TPOT {
		t.Errorf("vllm: %+v", a)
	}
	if b, err := ScenarioUpstream([]byte(file), "fixed"); err != nil || b.Seed != 9 {
		t.Errorf("fixed: seed %d, %v; want its own 9", b.Seed, err)
	}
	if _, err := ScenarioUpstream([]byte(file), "absent"); err == nil {
		t.Error("an absent provider parsed")
	}
}

func TestTokenRangeForms(t *testing.T) {
	for script, want := range map[string]upstream.TokenRange{
		"output_tokens: 12\n":               {Min: 12, Max: 12},
		"output_tokens: 3-9\n":              {Min: 3, Max: 9},
		"output_tokens: {min: 3, max: 9}\n": {Min: 3, Max: 9},
	} {
		cfg, err := ParseScript([]byte(script))
		if err != nil || cfg.OutputTokens != want {
			t.Errorf("%q: %+v, %v; want %+v", script, cfg.OutputTokens, err, want)
		}
	}
	if _, err := ParseScript([]byte("output_tokens: lots\n")); err == nil || !strings.Contains(err.Error(), "output_tokens") {
		t.Errorf("a bad range: %v, want an error naming output_tokens", err)
	}
}
