package gateway

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// The translated relay's framer cuts the provider's bytes where
// translate.ParseEvents would: it hands the translator exactly the
// events ParseEvents finds, whatever the line endings and wherever a
// read ended.
func FuzzLastEventEnd(f *testing.F) {
	for _, s := range []string{
		"", "\n", "\r\n", "\r", "data: x", "data: x\n", "data: x\n\n", "data: x\r\n\r\n", "data: x\r\r",
		"data: x\r", "data: x\n\r", "event: a\ndata: {}\n\ndata: y\n", ":c\n\nda", "data: a\n\n\n\ndata: b\r\n\r",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		_, want := translate.ParseEvents(p)
		if got := lastEventEnd(p); got != want {
			t.Fatalf("lastEventEnd(%q) = %d, ParseEvents took %d", p, got, want)
		}
	})
}
