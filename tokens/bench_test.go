package tokens

import (
	"testing"

	"github.com/sluice-gw/sluice/tokens/tokenstest"
)

// BenchmarkRequest counts a chat request of about 2,000 tokens (9.6 kB):
//
//   - cold: every message is new to the cache (each iteration stamps a
//     new serial into all of them), so all of it is tokenized;
//   - warm: the same conversation with a new last message, as a chat
//     client's next turn sends it: five messages are found in the
//     cache, the last (about 250 tokens) is tokenized;
//   - hit: a body seen before (a retry, a hedge): the body is scanned and
//     every count comes from the cache.
func BenchmarkRequest(b *testing.B) {
	Preload(O200kBase)
	run := func(b *testing.B, stamp func(ch *tokenstest.Chat, i uint64)) {
		c := NewCounter(0)
		ch := tokenstest.NewChat("gpt-4o", 1)
		if _, err := c.Request(O200kBase, false, ch.Body); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(ch.Body)))
		b.ReportAllocs()
		var i uint64
		for b.Loop() {
			i++
			stamp(ch, i)
			if _, err := c.Request(O200kBase, false, ch.Body); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("cold", func(b *testing.B) { run(b, (*tokenstest.Chat).Stamp) })
	b.Run("warm", func(b *testing.B) { run(b, (*tokenstest.Chat).StampLast) })
	b.Run("hit", func(b *testing.B) { run(b, func(*tokenstest.Chat, uint64) {}) })
}

// BenchmarkTokenScan is the scanner alone over the same body: the floor
// of a request whose counts are all cached.
func BenchmarkTokenScan(b *testing.B) {
	ch := tokenstest.NewChat("gpt-4o", 1)
	b.SetBytes(int64(len(ch.Body)))
	b.ReportAllocs()
	for b.Loop() {
		s := scanner{b: ch.Body}
		if s.skip(); s.bad {
			b.Fatal("not JSON")
		}
	}
}
