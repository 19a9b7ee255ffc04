package sim

import (
	"math/rand/v2"

	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// Draws makes n of the draws the simulator makes for the requests of a
// stream of c, through the methods a run calls: each request's class
// from classes (flow.draw) and its prompt length from sizes
// (flow.promptTokens), the two sources a stream draws them from. It
// exists for the agreement test in internal/harness/loadgen
// (draws_test.go), which feeds sluice load's draw path the same sources
// and expects the same decisions.
func Draws(c scenario.Clients, classes, sizes *rand.Rand, n int) (class, prompt []int) {
	fl := &flow{shares: c.PriorityShares(), prompt: c.Prompt(), rng: classes, tokens: sizes}
	for range n {
		class = append(class, int(fl.draw()))
		prompt = append(prompt, int(fl.promptTokens()))
	}
	return class, prompt
}
