package workload

import (
	"math"
	"testing"
)

func TestMixClass(t *testing.T) {
	justBelow1 := math.Nextafter(1, 0)
	for _, c := range []struct {
		name string
		mix  Mix
		u    float64
		want int
	}{
		{"first class from 0", Mix{0.2, 0.5, 0.3}, 0, 0},
		{"a share's end belongs to the next", Mix{0.2, 0.5, 0.3}, 0.2, 1},
		{"last class", Mix{0.2, 0.5, 0.3}, 0.95, 2},
		{"shares need not sum to 1", Mix{1, 1, 2}, 0.5, 2},
		{"a class with no share is skipped", Mix{0.5, 0, 0.5}, 0.5, 2},
		{"no shares at all: interactive", Mix{}, 0.3, Interactive},
		{"all interactive", Mix{0, 1, 0}, justBelow1, 1},
		// u just below 1 with these shares leaves x at or past the last
		// share after rounding. The rule: the last class with a share,
		// never interactive when the mix gives it none. (The simulator
		// used to answer interactive here.)
		{"rounding past the end: last class with a share", Mix{0.3, 0, 0.7}, justBelow1, 2},
		{"rounding past the end, every class shared", Mix{0.1, 0.2, 0.3}, justBelow1, 2},
		{"rounding past the end, background unshared", Mix{0.3, 0.7, 0}, justBelow1, 1},
	} {
		if got := c.mix.Class(c.u); got != c.want {
			t.Errorf("%s: %v.Class(%v) = %d, want %d", c.name, c.mix, c.u, got, c.want)
		}
	}
}

// TestMixFallbackIsReached guards the cases above: with these shares,
// the walk over the shares really does run off the end, so the fallback
// rule is what they pin.
func TestMixFallbackIsReached(t *testing.T) {
	u := math.Nextafter(1, 0)
	for _, m := range []Mix{{0.3, 0, 0.7}, {0.1, 0.2, 0.3}} {
		x := u * (m[0] + m[1] + m[2])
		for _, s := range m {
			x -= s
		}
		if x < 0 {
			t.Errorf("%v: u %v falls inside the shares; pick shares whose rounding runs past the end", m, u)
		}
	}
}
