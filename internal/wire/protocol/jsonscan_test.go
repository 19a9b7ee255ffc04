package protocol

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// scanChunks feeds data to a fresh scanner in chunks cut at the given
// offsets and reports whether it is one whole value.
func scanChunks(data []byte, cuts []int) bool {
	var s JSONScanner
	prev := 0
	for _, c := range cuts {
		if c > prev && c <= len(data) {
			s.Write(data[prev:c])
			prev = c
		}
	}
	s.Write(data[prev:])
	return s.Done()
}

func TestJSONScannerAgreesWithValid(t *testing.T) {
	cases := []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `true`, `false`, `null`, ` {"a" : [1, 2, {"b": null}] } `,
		`{"s":"\u00e9\n\"x\""}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `01`, `1.`, `.5`, `1e`, `1e+`, `-`, `tru`, `nulll`,
		`{"a":1}{"b":2}`, `[1 2]`, `"\x"`, `"\u12g4"`, "\"a\tb\"", `]`, `{]`, `[}`, `{"a":[1,2}`, ``, ` `, `"abc`,
		`{"choices":[{"message":{"content":"hi"}}],"usage":{"completion_tokens":3}}`, `123abc`, `[-1.25E+10]`, `[1e5,2E-5]`,
		"\xff", `"` + "\xff" + `"`, `{"a":"b" "c":1}`, `[true false]`, `{"a":{"b":{"c":[[[]]]}}}`,
	}
	for _, c := range cases {
		want := json.Valid([]byte(c))
		if got := scanChunks([]byte(c), nil); got != want {
			t.Errorf("%q: scanner says %v, json.Valid %v", c, got, want)
		}
		// Every two-way split agrees too: state carries across chunks.
		for i := 1; i < len(c); i++ {
			if got := scanChunks([]byte(c), []int{i}); got != want {
				t.Errorf("%q split at %d: scanner says %v, json.Valid %v", c, i, got, want)
			}
		}
	}
}

// Random documents, mutated and cut at random places, against json.Valid:
// the clever incremental check against the dumb whole-buffer one.
func TestJSONScannerRandomised(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}[]",:0123456789-+.eEtrufalsn \\u"abc`)
	for i := range 20000 {
		doc := randomJSON(rng, 3)
		b := []byte(doc)
		if i%2 == 1 && len(b) > 0 {
			// Mutate: most mutations make it invalid, some do not.
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		var cuts []int
		for range rng.IntN(4) {
			cuts = append(cuts, rng.IntN(len(b)+1))
		}
		sortInts(cuts)
		if got, want := scanChunks(b, cuts), json.Valid(b); got != want {
			t.Fatalf("%q cut at %v: scanner %v, json.Valid %v", b, cuts, got, want)
		}
	}
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func randomJSON(rng *rand.Rand, depth int) string {
	switch k := rng.IntN(8); {
	case depth > 0 && k == 0:
		n := rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = `"k` + string(rune('a'+i)) + `":` + randomJSON(rng, depth-1)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case depth > 0 && k == 1:
		n := rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = randomJSON(rng, depth-1)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case k == 2:
		return `"s\"\\\u00e9` + string(rune('a'+rng.IntN(26))) + `"`
	case k == 3:
		return []string{"true", "false", "null"}[rng.IntN(3)]
	default:
		return []string{"0", "-1", "3.25", "1e9", "-2.5E-3", "42"}[rng.IntN(6)]
	}
}

func TestJSONScannerDepthAndReset(t *testing.T) {
	deep := strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)
	var s JSONScanner
	if s.Write([]byte(deep)) {
		t.Fatal("nesting past MaxJSONDepth must be refused")
	}
	s.Reset()
	ok := strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth)
	if !s.Write([]byte(ok)) || !s.Done() {
		t.Fatal("nesting at MaxJSONDepth must be accepted after Reset")
	}
}

func TestJSONScannerAllocatesNothing(t *testing.T) {
	doc := []byte(`{"id":"x","choices":[{"message":{"role":"assistant","content":"hello \"there\""},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7},"n":[1.5e3,true,null]}`)
	allocs := testing.AllocsPerRun(100, func() {
		var s JSONScanner
		s.Write(doc)
		if !s.Done() {
			t.Fatal("not done")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per scan, want 0", allocs)
	}
}

func FuzzJSONScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\u00e9"]}`, `[true,false,null]`, `{"a":}`, `-0.0`, `"\"`} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		c := int(cut)
		if c > len(b) {
			c = len(b)
		}
		if got, want := scanChunks(b, []int{c}), json.Valid(b); got != want {
			t.Fatalf("%q cut at %d: scanner %v, json.Valid %v", b, c, got, want)
		}
	})
}
