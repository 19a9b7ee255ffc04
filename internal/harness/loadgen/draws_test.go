package loadgen

import (
	"math/rand/v2"
	"testing"

	"github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/sim"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// TestDrawsAgreeWithTheSimulator feeds sluice load's draw path and the
// simulator's (sim.Draws) the same stream (a priority mix, a prompt
// range) and the same seeded sources, and expects the same classes and
// prompt lengths: both draw through workload.Mix and workload.Sizes,
// and this keeps them doing so.
func TestDrawsAgreeWithTheSimulator(t *testing.T) {
	const n = 2000
	for _, c := range []struct {
		name   string
		mix    map[string]float64
		prompt upstream.TokenRange
		seed   uint64
	}{
		{"defaults: all interactive, the default prompt", nil, upstream.TokenRange{}, 1},
		{"three classes, a range", map[string]float64{"critical": 0.1, "interactive": 0.6, "background": 0.3}, upstream.TokenRange{Min: 100, Max: 400}, 2},
		{"no interactive share", map[string]float64{"critical": 0.3, "background": 0.7}, upstream.TokenRange{Min: 50}, 3},
		{"shares that do not sum to 1", map[string]float64{"interactive": 2, "background": 5}, upstream.TokenRange{Min: 1, Max: 2}, 4},
		{"every share zero", map[string]float64{"critical": 0, "background": 0}, upstream.TokenRange{Min: 20000, Max: 20000}, 5},
		{"max below min", map[string]float64{"background": 1}, upstream.TokenRange{Min: 300, Max: 200}, 6},
	} {
		cl := scenario.Clients{Priorities: c.mix, PromptTokens: c.prompt}
		src := func(k uint64) *rand.Rand { return rand.New(rand.NewPCG(c.seed, k)) }

		// Load's path: a stream's plan and bodies as newPlan builds
		// them, drawn by the methods issue calls.
		sp := &streamPlan{shares: cl.PriorityShares()}
		b := &bodies{tokens: cl.Prompt()}
		classes, sizes := src(1), src(2)
		var loadClass, loadPrompt []int
		for range n {
			loadClass = append(loadClass, sp.priority(classes.Float64()))
			loadPrompt = append(loadPrompt, b.promptTokens(sizes))
		}

		simClass, simPrompt := sim.Draws(cl, src(1), src(2), n)
		for i := range n {
			if simClass[i] != loadClass[i] || simPrompt[i] != loadPrompt[i] {
				t.Errorf("%s: request %d: sim drew class %d, prompt %d; load drew class %d, prompt %d",
					c.name, i, simClass[i], simPrompt[i], loadClass[i], loadPrompt[i])
				break
			}
		}
	}
}
