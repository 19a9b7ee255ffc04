package tokens

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
)

// BenchmarkRequest counts a chat request of about 2,000 tokens (9.6 kB):
//
//   - cold: every message is new to the cache (each iteration stamps a
//     new serial into all of them), so all of it is tokenized;
//   - warm: the same conversation with a new last message, as a chat
//     client's next turn sends it: five messages are found in the
//     cache, the last (about 250 tokens) is tokenized;
//   - first: the body counted by a new Counter, whose caches hold
//     nothing;
//   - hit: a body seen before (a retry, a hedge): the body is scanned and
//     every count comes from the cache.
func BenchmarkRequest(b *testing.B) {
	Preload(O200kBase)
	run := func(b *testing.B, stamp func(ch *tokenstest.Chat, i uint64)) {
		c := NewCounter(0)
		ch := tokenstest.NewChat("gpt-4o", 1)
		if _, _, err := c.Request(O200kBase, false, ch.Body); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(ch.Body)))
		b.ReportAllocs()
		var i uint64
		for b.Loop() {
			i++
			stamp(ch, i)
			if _, _, err := c.Request(O200kBase, false, ch.Body); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("cold", func(b *testing.B) { run(b, (*tokenstest.Chat).Stamp) })
	// first: a Counter that has seen nothing, not even the words, as
	// after a restart: every piece goes to the library.
	b.Run("first", func(b *testing.B) {
		ch := tokenstest.NewChat("gpt-4o", 1)
		b.SetBytes(int64(len(ch.Body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := NewCounter(0).Request(O200kBase, false, ch.Body); err != nil {
				b.Fatal(err)
			}
		}
	})
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

// BenchmarkHostile counts a run of " \n" of 10 kB, 100 kB and 1 MiB, the
// input that makes the library's split quadratic: "library" is the
// library's Count on the text, "request" a new Counter's Request on a
// body holding it.
func BenchmarkHostile(b *testing.B) {
	Preload(Cl100kBase)
	for _, size := range []int{10 << 10, 100 << 10, 1 << 20} {
		text := strings.Repeat(" \n", size/2)
		body := []byte(`{"prompt":"` + strings.Repeat(` \n`, size/2) + `"}`)
		name := fmt.Sprintf("%dkB", size>>10)
		if size <= 100<<10 {
			b.Run("library/"+name, func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					codecs[encCl100k]().Count(text)
				}
			})
		}
		b.Run("request/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, _, err := NewCounter(0).Request(Cl100kBase, false, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
