package loadgen

import (
	"math/rand/v2"

	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// Draws makes n of the draws sluice load makes for the requests of a
// stream of c, through the methods a run calls: each request's class
// from classes (streamPlan.priority, one Float64 a request) and its
// prompt length from sizes (bodies.promptTokens). A run takes both from
// one source per stream, with each prompt's placement in between; here
// each has its own, as in the simulator. It exists for the agreement
// test in internal/sim (draws_test.go), which feeds both hosts the same
// sources and expects the same decisions.
func Draws(c scenario.Clients, classes, sizes *rand.Rand, n int) (class, prompt []int) {
	sp := &streamPlan{shares: c.PriorityShares()}
	b := &bodies{tokens: c.Prompt()}
	for range n {
		class = append(class, sp.priority(classes.Float64()))
		prompt = append(prompt, b.promptTokens(sizes))
	}
	return class, prompt
}
