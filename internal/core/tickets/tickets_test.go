package tickets

import (
	"math/rand/v2"
	"testing"
)

// TestTableIsAMap drives a Table and a map with the same random mix of
// keys handed out in order, lookups, replacements and deletes of keys
// young and old (some kept alive across many ring lengths, so slots
// collide, the overflow fills and the ring grows), and checks they agree
// after every step.
func TestTableIsAMap(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 9))
		var tb Table[uint64, int]
		want := map[uint64]int{}
		var next uint64
		var live []uint64
		for step := range 50_000 {
			switch k := rng.IntN(10); {
			case k < 4:
				next++
				tb.Put(next, step)
				want[next] = step
				live = append(live, next)
			case k < 5 && len(live) > 0:
				key := live[rng.IntN(len(live))]
				tb.Put(key, -step)
				want[key] = -step
			case k < 8 && len(live) > 0:
				i := len(live) - 1 - rng.IntN(min(len(live), 50)) // mostly young ones end
				if rng.IntN(20) == 0 {
					i = rng.IntN(len(live))
				}
				key := live[i]
				live = append(live[:i], live[i+1:]...)
				if !tb.Delete(key) {
					t.Fatalf("seed %d step %d: Delete(%d) found nothing", seed, step, key)
				}
				delete(want, key)
			default:
				key := uint64(rng.Int64N(int64(next) + 2))
				v, ok := tb.Get(key)
				w, wok := want[key]
				if ok != wok || v != w {
					t.Fatalf("seed %d step %d: Get(%d) = %d, %v; the map says %d, %v", seed, step, key, v, ok, w, wok)
				}
			}
			if tb.Len() != len(want) {
				t.Fatalf("seed %d step %d: Len %d, the map holds %d", seed, step, tb.Len(), len(want))
			}
		}
		n := 0
		tb.All(func(k uint64, v int) bool {
			if want[k] != v {
				t.Fatalf("seed %d: All gave %d=%d, the map says %d", seed, k, v, want[k])
			}
			n++
			return true
		})
		if n != len(want) {
			t.Fatalf("seed %d: All gave %d keys, want %d", seed, n, len(want))
		}
		if len(tb.slots) == MinSlots || len(tb.more) == 0 {
			t.Fatalf("seed %d: %d slots, %d in the overflow: no key outlived its slot, so the test measured only the ring", seed, len(tb.slots), len(tb.more))
		}
		if len(tb.slots) > MaxSlots {
			t.Fatalf("seed %d: the ring grew to %d slots", seed, len(tb.slots))
		}
	}
}

// BenchmarkTable and BenchmarkMap put, get and delete keys handed out in
// order with a thousand alive at once.
func BenchmarkTable(b *testing.B) {
	var tb Table[uint64, *int]
	x := new(int)
	for i := range uint64(b.N) {
		tb.Put(i+1000, x)
		tb.Get(i + 500)
		tb.Delete(i)
	}
}

func BenchmarkMap(b *testing.B) {
	m := map[uint64]*int{}
	x := new(int)
	for i := range uint64(b.N) {
		m[i+1000] = x
		_ = m[i+500]
		delete(m, i)
	}
}
