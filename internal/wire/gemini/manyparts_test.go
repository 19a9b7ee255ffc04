package gemini

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/native"
)

// manyParts is a whole Gemini answer of n one-character text parts,
// about 13 bytes a part.
func manyParts(n int) []byte {
	var b bytes.Buffer
	b.Grow(13*n + 128)
	b.WriteString(`{"candidates":[{"content":{"role":"model","parts":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"text":"a"}`)
	}
	b.WriteString(`]},"finishReason":"STOP"}]}`)
	return b.Bytes()
}

// An answer of 250,000 small text parts (3.25 MB) is read in time
// proportional to its size: its text is built once, not joined part by
// part (12.6 s of CPU, in the square of the parts, before).
func TestAnswerOfManyPartsIsLinear(t *testing.T) {
	const parts = 250_000
	body := manyParts(parts)
	start := processCPU()
	got, err := Reply{Model: "gemini-2.5-flash"}.Answer(body)
	cpu := processCPU() - start
	if err != nil {
		t.Fatal(err)
	}
	var a native.Answer
	if err := json.Unmarshal(got, &a); err != nil || len(a.Content) != 1 || a.Content[0].Text == nil || *a.Content[0].Text != strings.Repeat("a", parts) {
		t.Fatalf("answer of %d parts: %v, %d blocks", parts, err, len(a.Content))
	}
	limit := 500 * time.Millisecond
	if raceEnabled {
		limit *= 10
	}
	t.Logf("%d parts (%d bytes): %v of CPU", parts, len(body), cpu)
	if cpu > limit {
		t.Errorf("%d text parts (%d bytes) took %v of CPU; want under %v", parts, len(body), cpu, limit)
	}
}

// BenchmarkAnswerManyParts reads an answer of 250,000 one-character
// text parts.
func BenchmarkAnswerManyParts(b *testing.B) {
	body := manyParts(250_000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Reply{Model: "g"}).Answer(body); err != nil {
			b.Fatal(err)
		}
	}
}

// The parts' scan reads what encoding/json reads, whatever the part:
// escapes, other cases of a key, repeated keys, null, other fields,
// and a part of the wrong type fails alike.
func TestPartsReadAsEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`[]`, `null`, `[{"text":"a"},{"text":"b","thought":true}]`, `[ { "text" : "sp ace" , "thought" : false } ]`,
		`[{"text":"esc\"aped\u00e9"}]`, `[{"Text":"case"}]`, `[{"text":"a","text":"b"}]`, `[{"text":null}]`,
		`[{"thought":true}]`, `[{}]`, `[{"text":"x","thoughtSignature":"s"}]`,
		`[{"functionCall":{"name":"f","args":{"a":1}}},{"text":"after"}]`, `[{"inlineData":{"mimeType":"i","data":"AA=="}}]`,
		`[{"text":"bad utf8 \xff"}]`, `[{"thought":1}]`,
	} {
		var want struct {
			Parts []gmPart `json:"parts"`
		}
		var got gmContent
		doc := `{"parts":` + in + `}`
		werr := json.Unmarshal([]byte(doc), &want)
		gerr := json.Unmarshal([]byte(doc), &got)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: error %v, encoding/json %v", in, gerr, werr)
		}
		if werr != nil {
			continue // what is half read is thrown away
		}
		w, _ := json.Marshal(want.Parts)
		g, _ := json.Marshal([]gmPart(got.Parts))
		if !bytes.Equal(w, g) || (want.Parts == nil) != (got.Parts == nil) {
			t.Errorf("%s: read %s, encoding/json %s", in, g, w)
		}
	}
}
