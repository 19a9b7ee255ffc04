package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/sluice-gw/sluice/internal/harness/loadgen"
	upmodel "github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// TestDrawsAgreeWithLoad feeds the simulator's draw path and sluice
// load's the same stream (a priority mix, a prompt range) and the same
// seeded sources, and expects the same classes and prompt lengths: both
// draw through workload.Mix and workload.Sizes, and this keeps them
// doing so.
func TestDrawsAgreeWithLoad(t *testing.T) {
	const n = 2000
	for _, c := range []struct {
		name   string
		mix    map[string]float64
		prompt upmodel.TokenRange
		seed   uint64
	}{
		{"defaults: all interactive, the default prompt", nil, upmodel.TokenRange{}, 1},
		{"three classes, a range", map[string]float64{"critical": 0.1, "interactive": 0.6, "background": 0.3}, upmodel.TokenRange{Min: 100, Max: 400}, 2},
		{"no interactive share", map[string]float64{"critical": 0.3, "background": 0.7}, upmodel.TokenRange{Min: 50}, 3},
		{"shares that do not sum to 1", map[string]float64{"interactive": 2, "background": 5}, upmodel.TokenRange{Min: 1, Max: 2}, 4},
		{"every share zero", map[string]float64{"critical": 0, "background": 0}, upmodel.TokenRange{Min: 20000, Max: 20000}, 5},
		{"max below min", map[string]float64{"background": 1}, upmodel.TokenRange{Min: 300, Max: 200}, 6},
	} {
		cl := scenario.Clients{Priorities: c.mix, PromptTokens: c.prompt}
		src := func(k uint64) *rand.Rand { return rand.New(rand.NewPCG(c.seed, k)) }

		// The simulator's path: a stream built as newFlows builds it.
		fl := &flow{shares: cl.PriorityShares(), prompt: cl.Prompt(), rng: src(1), tokens: src(2)}
		var simClass, simPrompt []int
		for range n {
			simClass = append(simClass, int(fl.draw()))
			simPrompt = append(simPrompt, int(fl.promptTokens()))
		}

		loadClass, loadPrompt := loadgen.Draws(cl, src(1), src(2), n)
		for i := range n {
			if simClass[i] != loadClass[i] || simPrompt[i] != loadPrompt[i] {
				t.Errorf("%s: request %d: sim drew class %d, prompt %d; load drew class %d, prompt %d",
					c.name, i, simClass[i], simPrompt[i], loadClass[i], loadPrompt[i])
				break
			}
		}
	}
}
