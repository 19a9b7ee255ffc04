package workload

import (
	"math/rand/v2"
	"testing"
)

func TestSizesDraw(t *testing.T) {
	for _, c := range []struct {
		sizes    Sizes
		min, max int
	}{
		{Sizes{Min: 100}, 100, 100},
		{Sizes{Min: 100, Max: 100}, 100, 100},
		{Sizes{Min: 100, Max: 50}, 100, 100}, // Max below Min: exactly Min
		{Sizes{Min: 10, Max: 13}, 10, 13},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		seen := map[int]bool{}
		for range 200 {
			n := c.sizes.Draw(rng)
			if n < c.min || n > c.max {
				t.Fatalf("%+v drew %d, want %d..%d", c.sizes, n, c.min, c.max)
			}
			seen[n] = true
		}
		if len(seen) != c.max-c.min+1 {
			t.Errorf("%+v drew %d distinct sizes, want every one of %d..%d", c.sizes, len(seen), c.min, c.max)
		}
	}
}

// TestFixedSizeDrawsNothing: a fixed size leaves the host's source
// where it was, so fixing a scenario's prompt length shifts no other
// draw from that source.
func TestFixedSizeDrawsNothing(t *testing.T) {
	a, b := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	Sizes{Min: 7}.Draw(a)
	if a.Uint64() != b.Uint64() {
		t.Error("a fixed size drew from the source")
	}
}
