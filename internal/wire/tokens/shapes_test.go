package tokens

import (
	"runtime"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
)

// requestShapes are the shapes that are requests, each with whether it
// is counted as Anthropic's.
func requestShapes(size int) []tokenstest.Shape {
	var out []tokenstest.Shape
	for _, s := range tokenstest.Shapes(size) {
		if s.Dialect != "answer" {
			out = append(out, s)
		}
	}
	return out
}

// BenchmarkShapes counts a body of each shape (1 MB of its smallest
// element, repeated) with a new Counter each time, and reports what it
// allocates per byte of the body.
func BenchmarkShapes(b *testing.B) {
	Preload(O200kBase)
	for _, s := range requestShapes(1 << 20) {
		b.Run(s.Dialect+"/"+s.Name, func(b *testing.B) {
			b.SetBytes(int64(len(s.Body)))
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			for b.Loop() {
				if _, _, err := NewCounter(0).Request(O200kBase, s.Dialect == "anthropic", s.Body); err != nil {
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

// maxCountBytesPerByte bounds what counting a body's tokens allocates
// per byte of it, whatever its shape: most of it is a new Counter's
// cache taking every distinct text (ids and names), which its bound caps.
// Twice as much under the race detector.
const maxCountBytesPerByte = 4

// Counting allocates within a fixed multiple of the body, whatever the
// body is made of.
func TestShapesCountWithinBody(t *testing.T) {
	Preload(O200kBase)
	for _, s := range requestShapes(256 << 10) {
		t.Run(s.Dialect+"/"+s.Name, func(t *testing.T) {
			c := NewCounter(0)
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			_, _, err := c.Request(O200kBase, s.Dialect == "anthropic", s.Body)
			runtime.ReadMemStats(&ms1)
			if err != nil {
				t.Fatal(err)
			}
			alloc := ms1.TotalAlloc - ms0.TotalAlloc
			per := float64(alloc) / float64(len(s.Body))
			t.Logf("%s/%s, %d bytes: allocated %d, %.2f a byte", s.Dialect, s.Name, len(s.Body), alloc, per)
			limit := float64(maxCountBytesPerByte)
			if raceEnabled {
				limit *= 2
			}
			if per > limit {
				t.Errorf("counting %d bytes of %s allocated %d bytes, %.1f a byte; want at most %v", len(s.Body), s.Name, alloc, per, limit)
			}
		})
	}
}
