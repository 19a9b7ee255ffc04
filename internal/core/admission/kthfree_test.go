package admission

import (
	"math"
	"math/rand/v2"
	"testing"
)

// kthFreeAll is kthFree's search over every slot, as it ran before it
// learned to search only the k smallest: the reference it must match bit
// for bit.
func kthFreeAll(rem []float64, round float64, k int) float64 {
	count := func(t float64) int {
		n := 0
		for _, r := range rem {
			if r <= t {
				n += int((t-r)/round) + 1
				if n >= k {
					return n
				}
			}
		}
		return n
	}
	hi := 0.0
	for _, r := range rem {
		hi = max(hi, r)
	}
	hi += float64(k) * round
	lo := 0.0
	if count(lo) >= k {
		return 0
	}
	for i := 0; i < 64 && hi-lo > round*1e-6; i++ {
		mid := (lo + hi) / 2
		if count(mid) >= k {
			hi = mid
		} else {
			lo = mid
		}
	}
	at := hi
	for _, r := range rem {
		m := 0.0
		if r <= lo {
			m = math.Floor((lo-r)/round) + 1
		}
		at = min(at, r+m*round)
	}
	return at
}

func TestKthFreeSmallestOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		n := 1 + rng.IntN(600)
		rem := make([]float64, n)
		for j := range rem {
			switch rng.IntN(4) {
			case 0: // ties and near-ties
				rem[j] = 0.25 + float64(rng.IntN(5))*1e-8
			case 1:
				rem[j] = 0
			default:
				rem[j] = rng.Float64() * 3
			}
		}
		round := 0.01 + rng.Float64()
		k := 1 + rng.IntN(max(1, n/4))
		if rng.IntN(3) == 0 {
			k = 1 + rng.IntN(3*n)
		}
		want := kthFreeAll(append([]float64(nil), rem...), round, k)
		got := kthFree(append([]float64(nil), rem...), round, k)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("case %d: n %d, k %d, round %v: %v, searching every slot %v", i, n, k, round, got, want)
		}
	}
}

func TestSmallest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		n := 1 + rng.IntN(50)
		rem := make([]float64, n)
		for j := range rem {
			rem[j] = float64(rng.IntN(20))
		}
		k := 1 + rng.IntN(n)
		sum := 0.0
		for _, r := range rem {
			sum += r
		}
		sorted := append([]float64(nil), rem...)
		slicesSort(sorted)
		got := smallest(rem, k)
		for j := range k {
			if got[j] != sorted[j] {
				t.Fatalf("smallest %d of %v: %v", k, sorted, got)
			}
		}
		after := 0.0
		for _, r := range rem {
			after += r
		}
		if after != sum {
			t.Fatal("smallest lost or duplicated a value")
		}
	}
}

func slicesSort(s []float64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j-1] > s[j]; j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
}
