package translate_test

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// translateShape translates a shape's body the way the gateway does for
// its dialect, dropping what the target cannot carry; ok is false for a
// shape this package does not translate.
func translateShape(s tokenstest.Shape) (ok bool, err error) {
	drop := translate.Options{Drop: []string{"*"}}
	switch s.Dialect {
	case "openai":
		_, err = translate.RequestToAnthropic(s.Body, drop)
	case "anthropic":
		_, err = translate.RequestToOpenAI(s.Body, drop)
	case "responses":
		_, err = translate.ResponsesToChat(s.Body, drop)
	default:
		return false, nil
	}
	return true, err
}

// BenchmarkShapes translates a body of each shape (1 MB of its smallest
// element, repeated) and reports what it allocates per byte of the body.
func BenchmarkShapes(b *testing.B) {
	for _, s := range tokenstest.Shapes(1 << 20) {
		if ok, _ := translateShape(s); !ok {
			continue
		}
		b.Run(s.Dialect+"/"+s.Name, func(b *testing.B) {
			b.SetBytes(int64(len(s.Body)))
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			for b.Loop() {
				if _, err := translateShape(s); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&ms1)
			per := float64(b.N) * float64(len(s.Body))
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/per, "B/byte")
			b.ReportMetric(1000*float64(ms1.Mallocs-ms0.Mallocs)/per, "allocs/kB")
		})
	}
}

// maxBytesPerByte bounds what translating a body allocates, per byte
// of it, whatever its shape: the translated body and the garbage of
// reading it, a small multiple of the body (twice as much under the
// race detector, whose instrumentation allocates more).
const maxBytesPerByte = 8

// maxKeysBytesPerByte is the bound for one message of many unknown
// keys, each a few bytes, all dropped: each key is read, sorted and
// dropped by name, in a list and a map, a few hundred bytes a key.
const maxKeysBytesPerByte = 48

// Translation allocates within a fixed multiple of the body, whatever
// the body is made of: many messages, content blocks, tool calls,
// tools, argument elements or nesting.
func TestShapesTranslateWithinBody(t *testing.T) {
	size := 256 << 10
	if raceEnabled {
		size = 128 << 10
	}
	for _, s := range tokenstest.Shapes(size) {
		if ok, _ := translateShape(s); !ok {
			continue
		}
		t.Run(s.Dialect+"/"+s.Name, func(t *testing.T) {
			alloc, err := allocated(func() error { _, err := translateShape(s); return err })
			if err != nil {
				t.Fatal(err)
			}
			per := float64(alloc) / float64(len(s.Body))
			t.Logf("%s/%s, %d bytes: allocated %d, %.2f a byte", s.Dialect, s.Name, len(s.Body), alloc, per)
			limit := float64(maxBytesPerByte)
			if s.Name == "keys" {
				limit = maxKeysBytesPerByte
			}
			if raceEnabled {
				limit *= 2
			}
			if per > limit {
				t.Errorf("translating %d bytes of %s allocated %d bytes, %.1f a byte; want at most %v", len(s.Body), s.Name, alloc, per, limit)
			}
		})
	}
}

// allocated is what f allocates on the heap: the least of three runs
// after a first, so that encoding/json's pools are as full as a
// gateway's earlier requests leave them, and a collection that empties
// them during one run does not count. Under the race detector, which
// drops a quarter of what is put in a pool, the least of eight.
func allocated(f func() error) (uint64, error) {
	if err := f(); err != nil {
		return 0, err
	}
	runs := 3
	if raceEnabled {
		runs = 8
	}
	least := uint64(math.MaxUint64)
	for range runs {
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		err := f()
		runtime.ReadMemStats(&ms1)
		if err != nil {
			return 0, err
		}
		least = min(least, ms1.TotalAlloc-ms0.TotalAlloc)
	}
	return least, nil
}

// Translation takes time in proportion to the body, whatever its shape:
// eight times the body takes well under twenty-four times as long (in
// the square of the body, it would take sixty-four). A body of 40,000
// unknown keys in one message took 4 s (7 s dropping them), its keys
// compared each with every other.
func TestShapesTranslateInLinearTime(t *testing.T) {
	const small, large = 32 << 10, 256 << 10
	smalls, larges := tokenstest.Shapes(small), tokenstest.Shapes(large)
	for i, s := range larges {
		if ok, _ := translateShape(s); !ok {
			continue
		}
		t.Run(s.Dialect+"/"+s.Name, func(t *testing.T) {
			ts, tl := fastest(t, smalls[i]), fastest(t, s)
			ratio := float64(tl) / float64(max(ts, time.Microsecond))
			t.Logf("%d bytes in %v, %d in %v: %.1f times as long", len(smalls[i].Body), ts, len(s.Body), tl, ratio)
			if ratio > 24 && tl > 20*time.Millisecond {
				t.Errorf("%d bytes of %s took %v, %.0f times %v for %d bytes; want time in proportion to the body", len(s.Body), s.Name, tl, ratio, ts, len(smalls[i].Body))
			}
		})
	}
}

// fastest is the shortest of three translations of s: the machine's
// other work only ever adds time.
func fastest(t *testing.T, s tokenstest.Shape) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range 3 {
		start := time.Now()
		if _, err := translateShape(s); err != nil {
			t.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	return best
}
