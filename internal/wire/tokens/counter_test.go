package tokens

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
)

// cached reports whether text's count is in c's cache (promoting it, as
// any lookup does).
func cached(c *Counter, enc Encoding, text string) bool {
	k := cacheKey{hash: maphash.String(c.seed, text), n: uint32(len(text)), enc: enc.index(), kind: kindLiteral}
	_, ok := c.texts.lookup(k)
	return ok
}

func TestCounterCache(t *testing.T) {
	c := NewCounter(0)
	text := tokenstest.Prose(1, 100)
	if c.Len() != 0 {
		t.Fatalf("a new Counter holds %d entries", c.Len())
	}
	if c.Count(O200kBase, "") != 0 || c.Len() != 0 {
		t.Error("the empty text is counted or cached")
	}
	n := c.Count(O200kBase, text)
	if n != refCount(O200kBase, text) || !cached(c, O200kBase, text) || c.Len() != 1 {
		t.Fatalf("Count = %d (reference %d), cached %v, Len %d", n, refCount(O200kBase, text), cached(c, O200kBase, text), c.Len())
	}
	if again := c.Count(O200kBase, text); again != n || c.Len() != 1 {
		t.Errorf("a hit returns %d (first %d), Len %d", again, n, c.Len())
	}
	// The encoding is part of the key.
	if cached(c, Cl100kBase, text) {
		t.Error("a count in o200k_base answers for cl100k_base")
	}
	c.Count(Cl100kBase, text)
	if c.Len() != 2 {
		t.Errorf("Len %d after counting in the second encoding; want 2", c.Len())
	}
}

// TestCounterEscapedKeys checks that a JSON string's raw bytes with
// escapes and the same bytes as literal text are different entries: the
// first is counted as its decoding.
func TestCounterEscapedKeys(t *testing.T) {
	raw := strings.Repeat(`caf\u00e9 \ud83d\ude00 `, 20)
	var decoded string
	if err := jsonUnquote(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	wantRaw, wantDecoded := refCount(Cl100kBase, raw), refCount(Cl100kBase, decoded)
	if wantRaw == wantDecoded {
		t.Fatal("the test needs texts whose counts differ")
	}
	for _, literalFirst := range []bool{false, true} {
		c := NewCounter(0)
		body := []byte(`{"prompt":"` + raw + `"}`)
		if literalFirst {
			c.Count(Cl100kBase, raw)
		}
		if n, _, err := c.Request(Cl100kBase, false, body); n != wantDecoded || err != nil {
			t.Errorf("literal first %v: Request = %d, %v; want %d", literalFirst, n, err, wantDecoded)
		}
		if n := c.Count(Cl100kBase, raw); n != wantRaw {
			t.Errorf("literal first %v: Count(raw) = %d; want %d", literalFirst, n, wantRaw)
		}
	}
}

func TestCounterBound(t *testing.T) {
	for _, tc := range []struct{ max, bound int }{
		{1, 32}, {32, 32}, {33, 64}, {100, 128}, {0, DefaultCacheEntries}, {-1, DefaultCacheEntries},
	} {
		if got := NewCounter(tc.max).Bound(); got != tc.bound {
			t.Errorf("NewCounter(%d).Bound() = %d; want %d", tc.max, got, tc.bound)
		}
	}
	c := NewCounter(100)
	for i := range 5000 {
		c.Count(Cl100kBase, fmt.Sprint("text number ", i))
		if i%97 == 0 && c.Len() > c.Bound() {
			t.Fatalf("after %d texts the cache holds %d entries; bound %d", i+1, c.Len(), c.Bound())
		}
	}
	if c.Len() > c.Bound() || c.Len() < c.Bound()/4 {
		t.Errorf("the cache holds %d entries after 5000 texts; bound %d", c.Len(), c.Bound())
	}
	// Counts still come out right once entries have been evicted.
	for i := range 50 {
		s := fmt.Sprint("text number ", i)
		if got, want := c.Count(Cl100kBase, s), refCount(Cl100kBase, s); got != want {
			t.Errorf("Count(%q) = %d after eviction; want %d", s, got, want)
		}
	}
}

// TestCounterKeepsHotEntries: a text used again before its shard has
// taken in a generation's worth of new ones is never evicted, however
// many other texts pass through.
func TestCounterKeepsHotEntries(t *testing.T) {
	c := NewCounter(32 * 8) // 8 entries per generation in each shard
	hot := "the system prompt every request carries"
	c.Count(O200kBase, hot)
	for i := range 20 * c.Bound() {
		c.Count(O200kBase, fmt.Sprint("cold ", i))
		if i%7 == 6 && !cached(c, O200kBase, hot) {
			t.Fatalf("the hot text was evicted after %d other texts", i+1)
		}
	}
}

func TestCounterConcurrent(t *testing.T) {
	texts := make([]string, 300)
	want := make([]int, len(texts))
	for i := range texts {
		texts[i] = fmt.Sprintf("message %d: %s", i, tokenstest.Prose(uint64(i), 10))
		want[i] = refCount(Cl100kBase, texts[i])
	}
	ch := tokenstest.NewChat("gpt-4o", 9)
	wantChat := refRequest(O200kBase, false, ch.Body)
	c := NewCounter(64) // far fewer entries than texts: evictions race with hits
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for r := range 3 {
				for i := range texts {
					j := (i*7 + g*31 + r) % len(texts)
					if got := c.Count(Cl100kBase, texts[j]); got != want[j] {
						t.Errorf("goroutine %d: Count(text %d) = %d; want %d", g, j, got, want[j])
						return
					}
				}
				if n, _, err := c.Request(O200kBase, false, ch.Body); n != wantChat || err != nil {
					t.Errorf("goroutine %d: Request = %d, %v; want %d", g, n, err, wantChat)
				}
				_ = c.Len()
			}
		})
	}
	wg.Wait()
	if c.Len() > c.Bound() {
		t.Errorf("the cache holds %d entries; bound %d", c.Len(), c.Bound())
	}
}
