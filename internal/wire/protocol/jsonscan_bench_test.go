package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

// The relay checks every large answer with JSONScanner as it passes;
// encoding/json's Valid, on the whole buffer, is the baseline.
var (
	numbersDoc = []byte(`{"data":[` + strings.Repeat(`{"embedding":[0.0123456,-0.0234567,0.0345678,0.0456789],"index":1},`, 20000) + `{}]}`)
	textDoc    = []byte(`{"choices":[{"message":{"content":"` + strings.Repeat(`lorem ipsum dolor sit amet, `, 20000) + `"}}]}`)
)

func benchScanner(b *testing.B, doc []byte) {
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		var s JSONScanner
		for i := 0; i < len(doc); i += 32 << 10 { // in relay-sized chunks
			s.Write(doc[i:min(i+32<<10, len(doc))])
		}
		if !s.Done() {
			b.Fatal("not done")
		}
	}
}

func benchValid(b *testing.B, doc []byte) {
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if !json.Valid(doc) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkJSONScannerNumbers(b *testing.B) { benchScanner(b, numbersDoc) }
func BenchmarkJSONValidNumbers(b *testing.B)   { benchValid(b, numbersDoc) }
func BenchmarkJSONScannerText(b *testing.B)    { benchScanner(b, textDoc) }
func BenchmarkJSONValidText(b *testing.B)      { benchValid(b, textDoc) }
