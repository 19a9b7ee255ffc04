package report

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSelectIsQuantile holds Select to Quantile's answer on samples of
// every size up to a few thousand: distinct, with many ties (latencies
// rounded to a tick), sorted, reversed and all equal.
func TestSelectIsQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := map[string]func(n int) Samples{
		"distinct": func(n int) Samples {
			s := make(Samples, n)
			for i := range s {
				s[i] = time.Duration(rng.Int64N(int64(10 * time.Second)))
			}
			return s
		},
		"ties": func(n int) Samples {
			s := make(Samples, n)
			for i := range s {
				s[i] = time.Duration(rng.IntN(7)) * 100 * time.Millisecond
			}
			return s
		},
		"sorted": func(n int) Samples {
			s := make(Samples, n)
			for i := range s {
				s[i] = time.Duration(i)
			}
			return s
		},
		"reversed": func(n int) Samples {
			s := make(Samples, n)
			for i := range s {
				s[i] = time.Duration(n - i)
			}
			return s
		},
		"equal": func(n int) Samples { return make(Samples, n) },
	}
	for name, shape := range shapes {
		for _, n := range []int{0, 1, 2, 3, 16, 17, 18, 100, 999, 1000, 1001, 4096} {
			for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 0.999, 1} {
				s := shape(n)
				want := slices.Clone(s).Quantile(q)
				if got := slices.Clone(s).Select(q); got != want {
					t.Fatalf("%s, %d samples, q %v: Select %v, Quantile %v", name, n, q, got, want)
				}
			}
		}
	}
}
