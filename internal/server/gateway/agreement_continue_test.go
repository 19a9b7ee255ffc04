package gateway

import (
	"fmt"
	"io"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/lifecycle/lifecycletest"
)

// TestAgreementContinue: each case's model, as the gateway builds it
// from its config: what each target can do (the caps its relay hands
// the engine), and where a stream broken on its first target goes on.
// The simulator's test of the same name builds the same model.
func TestAgreementContinue(t *testing.T) {
	opt := func(s string) string {
		if s == "" {
			return ""
		}
		return ", continuation: " + s
	}
	for _, c := range lifecycletest.Caps {
		t.Run(c.Name, func(t *testing.T) {
			m := continueModel(t, fmt.Sprintf(`
providers:
  - {name: base, kind: openai, continuation: none, base_url: http://127.0.0.1:1/v1}
  - {name: p, kind: %s, base_url: http://127.0.0.1:2/v1%s}
models:
  - name: m
    targets: [{provider: base, model: x}, {provider: p, model: x%s}]
`, c.Kind, opt(c.Provider), opt(c.Target)))
			if len(m.caps) != 2 || m.caps[0] != (lifecycle.ContinueCaps{}) || m.caps[1] != c.Want {
				t.Fatalf("caps %+v, want [{} %+v]", m.caps, c.Want)
			}
			if got := lifecycletest.ContinueOn(m.caps); got != c.WantContinue() {
				t.Fatalf("continued %+v, want %+v", got, c.WantContinue())
			}
		})
	}
}

// A model whose targets are narrowed for one request (the Responses
// API, translation, a native codec's refusal) keeps each target's caps
// beside it: the engine indexes them as the request's targets.
func TestNarrowedTargetsKeepTheirCaps(t *testing.T) {
	m := continueModel(t, `
providers:
  - {name: a, kind: openai, continuation: none, base_url: http://127.0.0.1:1/v1}
  - {name: b, kind: openai, base_url: http://127.0.0.1:2/v1}
  - {name: c, kind: anthropic, base_url: http://127.0.0.1:3/v1}
models:
  - name: m
    targets: [{provider: a, model: x}, {provider: b, model: x}, {provider: c, model: x}]
`)
	kept := m.keep(func(t target) bool { return t.provider.name != "b" })
	want := []lifecycle.ContinueCaps{{}, {Prefill: true, Prompt: true}}
	if len(kept.caps) != len(kept.route.Targets) || len(kept.route.Continue) != len(kept.route.Targets) {
		t.Fatalf("%d caps (%d on the route) for %d targets", len(kept.caps), len(kept.route.Continue), len(kept.route.Targets))
	}
	for i, w := range want {
		if kept.caps[i] != w || kept.route.Continue[i] != w {
			t.Errorf("kept target %d (%s): caps %+v, route %+v; want %+v", i, kept.targets[i].provider.name, kept.caps[i], kept.route.Continue[i], w)
		}
	}
	if len(m.caps) != 3 || m.caps[1] != (lifecycle.ContinueCaps{Prompt: true}) {
		t.Errorf("narrowing changed the model's own caps: %+v", m.caps)
	}
}

// continueModel is model m of the gateway config y.
func continueModel(t *testing.T, y string) *model {
	t.Helper()
	cfg, err := config.Parse([]byte(y), "continue.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{Logger: NewLogger(io.Discard, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g.models["m"]
}
