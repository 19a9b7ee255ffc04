package idempotency

import (
	"strings"
	"testing"
)

// FuzzParseHeader: an Idempotency-Key is accepted exactly when it is one
// value of 1 to MaxKeyLength printable ASCII bytes, and then as sent (a
// key that changed on the way would share another request's answer);
// a refusal names the header, so the client's 400 says what to fix.
func FuzzParseHeader(f *testing.F) {
	f.Add("6f1c2b9e-0d4e-4a53-9a3b-2f6f0c8d1e7a", "", false)
	f.Add("", "", false)
	f.Add("a", "b", true)
	f.Add("key with spaces ~!", "", false)
	f.Add("caf\u00e9", "", false)
	f.Add("tab\there", "", false)
	f.Add(strings.Repeat("k", MaxKeyLength+1), "", false)
	f.Fuzz(func(t *testing.T, v, second string, twice bool) {
		values := []string{v}
		if twice {
			values = append(values, second)
		}
		key, err := ParseHeader(values)
		printable := len(v) > 0 && len(v) <= MaxKeyLength && strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) < 0
		switch want := !twice && printable; {
		case want && (err != nil || key != v):
			t.Fatalf("%q: got %q, %v; want it as sent", values, key, err)
		case !want && err == nil:
			t.Fatalf("%q accepted as %q", values, key)
		case err != nil && (key != "" || !strings.HasPrefix(err.Error(), HeaderKey+": ")):
			t.Fatalf("%q: key %q with error %q, which must name the header", values, key, err)
		}
	})
}
