package sseenc

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// FuzzEncode: under any combination of words, any data, JSON or not,
// comes back from the SSE reader as what it was: the same JSON value, or
// the same text with its line breaks as "\n".
func FuzzEncode(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"é😀\/"}],"c":-0.5e3}`), "content_block_delta", uint32(0b1010_1010_1010))
	f.Add([]byte("[DONE]"), "", uint32(0))
	f.Add([]byte("line one\r\nline two\rthree\n"), "x", uint32(0xffff))
	f.Add([]byte(`"\ud800"`), "", uint32(0x7))
	f.Fuzz(func(t *testing.T, data []byte, name string, bits uint32) {
		if strings.ContainsAny(name, "\r\n") {
			t.Skip()
		}
		var w []string
		for i, word := range Words() {
			if bits&(1<<i) != 0 {
				w = append(w, word)
			}
		}
		e, err := Parse(strings.Join(w, "+"))
		if err != nil {
			t.Skip() // words that exclude each other
		}
		out := e.Stream(rand.New(rand.NewPCG(uint64(bits), 1))).AppendEvent(nil, name, data)
		evs, _ := Decode(string(out))
		if len(evs) != 1 {
			t.Fatalf("%s: %d events from %q", e, len(evs), out)
		}
		if json.Valid(data) {
			// Numbers as their literals: one beyond float64's range
			// fails a plain Unmarshal, and its value must survive too.
			want, _ := decodeNumbers([]byte(data))
			got, err := decodeNumbers([]byte(evs[0].Data))
			if err != nil || !reflect.DeepEqual(want, got) {
				t.Fatalf("%s: %q became %q (%v)", e, data, evs[0].Data, err)
			}
		} else {
			text := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(data))
			if evs[0].Data != text {
				t.Fatalf("%s: %q became %q", e, data, evs[0].Data)
			}
		}
		wantName := name
		switch {
		case e.noEvent:
			wantName = ""
		case e.oaiEvent && name == "":
			wantName = "message"
		}
		if evs[0].Name != wantName {
			t.Fatalf("%s: name %q became %q", e, name, evs[0].Name)
		}
	})
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
