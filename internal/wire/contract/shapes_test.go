package contract

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
)

// contracts are the two kinds of check, each with the most it may
// allocate per byte of the answer: json_object (the text must be a JSON
// object), read without building a value; and json_schema, whose
// schema reaches every element, decoded into values and walked by the
// schema library, which costs well over a hundred bytes for a
// two-byte element.
//
// size is the answer each is measured on: for json_schema, small enough
// that every shape's values are checked (within MaxCheckedValues).
var contracts = []struct {
	name, rf   string
	size       int
	maxPerByte float64
}{
	{"json_object", `{"type":"json_object"}`, 256 << 10, 8},
	{"json_schema", `{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object","properties":{"a":{"type":"array","items":{}}}}}}`, 64 << 10, 256},
}

// unhurried lifts the check's time budget for the test or benchmark:
// what is measured is memory, and a loaded machine (or the race
// detector) can take a large answer past MaxCheckTime.
func unhurried(tb testing.TB) {
	old := checkBudget
	checkBudget = time.Minute
	tb.Cleanup(func() { checkBudget = old })
}

// checkShape reads a whole answer and checks it against the contract
// response_format rf asks for.
func checkShape(body []byte, rf string) error {
	c, err := ForRequest(context.Background(), protocol.OpenAI, []byte(rf), nil)
	if err != nil {
		return err
	}
	a, err := ParseAnswer(protocol.OpenAI, body)
	if err != nil {
		return err
	}
	return c.Check(a)
}

func answerShapes(size int) []tokenstest.Shape {
	var out []tokenstest.Shape
	for _, s := range tokenstest.Shapes(size) {
		if s.Dialect == "answer" {
			out = append(out, s)
		}
	}
	return out
}

// BenchmarkShapes validates answers of each shape (JSON text made of
// its smallest element, repeated, of each contract's size), and
// reports what it allocates per byte of the answer.
func BenchmarkShapes(b *testing.B) {
	unhurried(b)
	for _, ct := range contracts {
		for _, s := range answerShapes(ct.size) {
			b.Run(ct.name+"/"+s.Name, func(b *testing.B) {
				b.SetBytes(int64(len(s.Body)))
				b.ReportAllocs()
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				for b.Loop() {
					if err := checkShape(s.Body, ct.rf); err != nil {
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
}

// Validation allocates within a fixed multiple of the answer, whatever
// its JSON is made of.
func TestShapesCheckWithinAnswer(t *testing.T) {
	unhurried(t)
	for _, ct := range contracts {
		for _, s := range answerShapes(ct.size) {
			t.Run(ct.name+"/"+s.Name, func(t *testing.T) {
				var ms0, ms1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms0)
				err := checkShape(s.Body, ct.rf)
				runtime.ReadMemStats(&ms1)
				if err != nil {
					t.Fatal(err)
				}
				alloc := ms1.TotalAlloc - ms0.TotalAlloc
				per := float64(alloc) / float64(len(s.Body))
				t.Logf("%s/%s, %d bytes: allocated %d, %.2f a byte", ct.name, s.Name, len(s.Body), alloc, per)
				if per > ct.maxPerByte {
					t.Errorf("validating %d bytes of %s against %s allocated %d bytes, %.1f a byte; want at most %v", len(s.Body), s.Name, ct.name, alloc, per, ct.maxPerByte)
				}
			})
		}
	}
}

// An answer of more values than MaxCheckedValues is not judged against
// its schema (IsCostly, as a check that takes too long), and costs a
// scan: a megabyte of one-digit elements, decoded and walked by the
// schema library, allocated 175 MB.
func TestTooManyValuesAreNotJudged(t *testing.T) {
	unhurried(t)
	body := answerShapes(MaxAnswerBytes - 4096)[0].Body // json-array
	schema := contracts[1].rf
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	err := checkShape(body, schema)
	runtime.ReadMemStats(&ms1)
	if !IsCostly(err) || !strings.Contains(err.Error(), "values") {
		t.Fatalf("an answer of %d bytes of one-digit elements: %v; want it not judged, naming its values", len(body), err)
	}
	per := float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(len(body))
	t.Logf("%d bytes: %.2f bytes allocated a byte", len(body), per)
	if per > 8 {
		t.Errorf("refusing to judge %d bytes allocated %.1f bytes a byte; want at most 8", len(body), per)
	}
}
