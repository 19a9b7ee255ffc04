package policy

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
)

// The first-token deadline is on by default: the engine gets the config's
// ceiling, floor and factor, a model with a fallback races, and a
// model's override or explicit off reaches its route.
func TestFromConfigFirstTokenAndContext(t *testing.T) {
	c, err := config.Parse([]byte(`providers:
  - {name: a, kind: openai, base_url: "http://127.0.0.1:1/v1"}
  - {name: b, kind: openai, base_url: "http://127.0.0.1:2/v1"}
models:
  - {name: two, targets: [{provider: a, model: x}, {provider: b, model: x}], context_fallback: big, context_window: 8000}
  - {name: one, targets: [{provider: a, model: x}]}
  - {name: reasoning, targets: [{provider: a, model: o}, {provider: b, model: o}], first_token_ceiling: 90s}
  - {name: off, targets: [{provider: a, model: o}, {provider: b, model: o}], first_token_ceiling: 0s}
  - {name: big, targets: [{provider: b, model: y}]}
`), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lc, err := FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if f := lc.FirstToken; f.Ceiling != 10*time.Second || f.Floor != 2*time.Second || f.Factor != 4 {
		t.Errorf("engine's first-token config %+v", f)
	}
	r := lc.Routes
	// (A model with a fallback races anyway for its rescues, off too.)
	if !r["two"].Races || r["one"].Races || !r["reasoning"].Races {
		t.Errorf("races: two %v, one %v, reasoning %v; want true, false, true", r["two"].Races, r["one"].Races, r["reasoning"].Races)
	}
	if r["reasoning"].FirstTokenCeiling != 90*time.Second || r["off"].FirstTokenCeiling >= 0 || r["two"].FirstTokenCeiling != 0 {
		t.Errorf("ceilings: reasoning %v, off %v, two %v", r["reasoning"].FirstTokenCeiling, r["off"].FirstTokenCeiling, r["two"].FirstTokenCeiling)
	}
	if r["two"].ContextFallback != "big" || r["two"].ContextWindow != 8000 {
		t.Errorf("context: %q, %d", r["two"].ContextFallback, r["two"].ContextWindow)
	}
}
