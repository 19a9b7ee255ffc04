package workload

import "math/rand/v2"

// Sizes is a uniform length in [Min, Max] tokens: a prompt's or a
// reply's. Max at or below Min means exactly Min.
type Sizes struct {
	Min, Max int
}

// Draw picks one length from rng. It draws nothing when the length is
// fixed, so a fixed size leaves the host's source where it was.
func (s Sizes) Draw(rng *rand.Rand) int {
	n := s.Min
	if s.Max > s.Min {
		n += rng.IntN(s.Max - s.Min + 1)
	}
	return n
}
