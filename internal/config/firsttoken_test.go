package config

import (
	"strings"
	"testing"
	"time"
)

func TestFirstTokenAndContextKeys(t *testing.T) {
	base := "providers: [{name: p, kind: openai, base_url: \"http://127.0.0.1:1/v1\"}]\n"
	cfg, err := Parse([]byte(base+"models: [{name: m, targets: [{provider: p, model: x}]}]\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f := cfg.FirstToken; f.Ceiling.D() != 10*time.Second || f.Floor.D() != 2*time.Second || f.Factor != 4 {
		t.Errorf("defaults %+v, want ceiling 10s, floor 2s, factor 4", f)
	}
	if cfg.Models[0].FirstTokenOff {
		t.Error("a model that sets nothing has its first-token deadline off")
	}
	cfg, err = Parse([]byte(base+`first_token: {ceiling: 0s}
models:
  - {name: m, targets: [{provider: p, model: x}], first_token_ceiling: 0s}
  - {name: r, targets: [{provider: p, model: o3}], first_token_ceiling: 90s}
`), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.FirstToken.Ceiling != 0 || !cfg.Models[0].FirstTokenOff || cfg.Models[1].FirstTokenOff || cfg.Models[1].FirstTokenCeiling.D() != 90*time.Second {
		t.Errorf("explicit zeros and overrides: %+v, %+v, %+v", cfg.FirstToken, cfg.Models[0], cfg.Models[1])
	}
	for _, c := range []struct{ yaml, want string }{
		{"first_token: {floor: 20s}\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n", "first_token.floor"},
		{"first_token: {factor: -1}\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n", "first_token"},
		{"models: [{name: m, targets: [{provider: p, model: x}], first_token_ceiling: -1s}]\n", "first_token_ceiling"},
		{"models: [{name: m, targets: [{provider: p, model: x}], context_fallback: nope}]\n", "context_fallback"},
		{"models: [{name: m, targets: [{provider: p, model: x}], context_fallback: m}]\n", "context_fallback"},
		{"models: [{name: m, targets: [{provider: p, model: x}], context_window: -5}]\n", "context_window"},
		{"models: [{name: a, targets: [{provider: p, model: x}], context_fallback: b}, {name: b, targets: [{provider: p, model: y}], context_fallback: a}]\n", "come back"},
	} {
		if _, err := Parse([]byte(base+c.yaml), "f.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want one naming %s", c.yaml, err, c.want)
		}
	}
	if _, err := Parse([]byte(base+"models: [{name: small, targets: [{provider: p, model: x}], context_fallback: big, context_window: 8192}, {name: big, targets: [{provider: p, model: y}]}]\n"), "f.yaml"); err != nil {
		t.Errorf("a context fallback chain: %v", err)
	}
}
