package policy

import (
	"fmt"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/lifecycle/lifecycletest"
)

// A provider that takes a prefill, and a target of it
// that says none. The target's own setting holds on the route both
// hosts build from (the simulator once read the provider's alone and
// continued there). A second target of the same provider and model,
// with no setting of its own, keeps the provider's.
const targetNoneYAML = `
providers:
  - {name: p, kind: openai, continuation: prefill, base_url: http://127.0.0.1:1/v1}
  - {name: q, kind: anthropic, base_url: http://127.0.0.1:2/v1}
models:
  - name: m
    targets:
      - {provider: p, model: x, continuation: none}
      - {provider: q, model: y}
      - {provider: p, model: x}
`

func TestRouteCarriesTargetsContinuation(t *testing.T) {
	cfg, err := config.Parse([]byte(targetNoneYAML), "none.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ec, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt := ec.Routes["m"]
	want := []lifecycle.ContinueCaps{{}, {Prefill: true, Prompt: true}, {Prefill: true, Prompt: true}}
	if len(rt.Continue) != len(rt.Targets) {
		t.Fatalf("%d caps for %d targets", len(rt.Continue), len(rt.Targets))
	}
	for i, w := range want {
		if rt.Continue[i] != w {
			t.Errorf("target %d: %+v (mode %v), want %+v (mode %v)", i, rt.Continue[i], rt.Continue[i].Mode(), w, w.Mode())
		}
	}
	if m := rt.Continue[0].Mode(); m != lifecycle.ContinueNone {
		t.Errorf("the target that says none continues by %v", m)
	}
}

// Every capability case, as a one-target model in a config.
func TestRouteContinueCases(t *testing.T) {
	for _, c := range lifecycletest.Caps {
		t.Run(c.Name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(capsCaseYAML(c)), "caps.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ec, err := FromConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := ec.Routes["m"].Continue; len(got) != 1 || got[0] != c.Want {
				t.Fatalf("caps %+v, want [%+v]", got, c.Want)
			}
		})
	}
}

// capsCaseYAML is c as a config: a provider p with c's kind and setting,
// and a model m whose one target, on p, has c's own.
func capsCaseYAML(c lifecycletest.CapsCase) string {
	opt := func(s string) string {
		if s == "" {
			return ""
		}
		return ", continuation: " + s
	}
	return fmt.Sprintf(`
providers:
  - {name: p, kind: %s, base_url: http://127.0.0.1:1/v1%s}
models:
  - name: m
    targets: [{provider: p, model: x%s}]
`, c.Kind, opt(c.Provider), opt(c.Target))
}
