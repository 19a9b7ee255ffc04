package tokens

import (
	"hash/maphash"
	"math"
	"sync"
	"unicode/utf8"
)

// DefaultCacheEntries is the cache bound NewCounter uses when given none:
// about one 50-message conversation for each of 1,300 clients.
const DefaultCacheEntries = 1 << 16

// numShards splits the cache so concurrent requests seldom wait on one
// lock.
const numShards = 16

// Counter counts tokens and remembers the counts of the texts it has
// seen. A chat client resends the whole conversation with every turn, so
// without the cache each request would tokenize every earlier message
// again; with it, only the new ones. It is safe for concurrent use.
//
// The cache holds counts, not texts. An entry is keyed by a 64-bit
// seeded hash of the text (maphash, with a seed drawn when the Counter is
// made, so a client cannot aim a text at another's entry), the text's
// length and the encoding, 16 bytes, and holds a 4-byte count. Two
// different texts share an entry only if both their hashes and their
// lengths agree: with a full default cache, about one lookup in 10^14.
//
// The bound is on entries: at most the bound given to NewCounter,
// rounded up to a multiple of 32 (each of 16 shards keeps two
// generations of at most a 32nd each). Measured with Go 1.26's maps, a
// full cache takes under 64 bytes of heap per entry, so the default
// bound holds at most 4 MiB. Eviction is by generation, which is close
// to least-recently-used at no cost per hit: when a shard's current
// generation is full, the previous one is dropped, the current one
// becomes the previous, and an entry found in the previous generation is
// copied into the current.
type Counter struct {
	seed   maphash.Seed
	texts  cache // counts of whole texts
	pieces cache // counts of the pre-tokenizer's pieces
}

// cache is a bounded map from a text's key to its count: numShards
// shards, each with two generations of at most gen entries.
type cache struct {
	gen    int // entries per generation in each shard
	shards [numShards]shard
}

type shard struct {
	mu        sync.Mutex
	cur, prev map[cacheKey]int32
	_         [40]byte // a cache line per shard
}

// cacheKey identifies a text. kind tells the raw bytes of a JSON string
// with escapes (whose text is their decoding) from literal text.
type cacheKey struct {
	hash uint64
	n    uint32
	enc  encIndex
	kind uint8
}

const (
	kindLiteral uint8 = iota
	kindEscaped
)

// NewCounter returns a Counter whose cache holds at most maxEntries
// counts (rounded up to a multiple of 32); DefaultCacheEntries if
// maxEntries is 0 or less.
func NewCounter(maxEntries int) *Counter {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheEntries
	}
	gen := (maxEntries + 2*numShards - 1) / (2 * numShards)
	return &Counter{seed: maphash.MakeSeed(), texts: cache{gen: gen}, pieces: cache{gen: gen}}
}

// Bound is the most entries the cache of texts holds; the cache of
// pieces has the same bound.
func (c *Counter) Bound() int { return 2 * numShards * c.texts.gen }

// Len is the number of entries the cache of texts holds now.
func (c *Counter) Len() int { return c.texts.len() }

func (c *cache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.cur) + len(sh.prev)
		sh.mu.Unlock()
	}
	return n
}

// Count returns the number of tokens in text, from the cache when it can.
func (c *Counter) Count(enc Encoding, text string) int {
	if text == "" {
		return 0
	}
	e := enc.index()
	k := cacheKey{hash: maphash.String(c.seed, text), n: uint32(len(text)), enc: e, kind: kindLiteral}
	if n, ok := c.texts.lookup(k); ok {
		return n
	}
	m := memos.Get().(*memo)
	clear(m[:])
	n, _ := c.countPieces(e, validUTF8(text), math.MaxInt, m)
	memos.Put(m)
	c.texts.store(k, n)
	return n
}

// countRaw counts a slice of a request body: literal text (a string
// without escapes, or JSON text counted as written), or a string's raw
// content with escapes, which is decoded first. The key is the raw
// bytes, so a repeated message is found without decoding it.
//
// Only the first limit bytes of the text are tokenized: if it is longer,
// the count is exact for the pieces within limit and an estimate for
// the rest (see estimate), estimated is true and the count is not
// cached. The raw length is what is held against limit. *m is the
// request's memo, taken from the pool on its first miss.
func (c *Counter) countRaw(e encIndex, raw []byte, escaped bool, limit int, m **memo) (n int, estimated bool) {
	if len(raw) == 0 {
		return 0, false
	}
	k := cacheKey{hash: maphash.Bytes(c.seed, raw), n: uint32(len(raw)), enc: e, kind: kindLiteral}
	if escaped {
		k.kind = kindEscaped
	}
	whole := len(raw) <= limit
	if whole {
		if n, ok := c.texts.lookup(k); ok {
			return n, false
		}
	}
	text := raw
	if escaped {
		text = unquote(raw)
	}
	if *m == nil {
		*m = memos.Get().(*memo)
		clear((*m)[:])
	}
	n, estimated = c.countPieces(e, validUTF8(string(text)), limit, *m)
	if whole {
		c.texts.store(k, n)
	}
	return n, estimated
}

// estimate stands in for the count of b bytes of text left untokenized:
// a third of a token per byte, rounded up, which is more than English
// or code takes (about a quarter) and about what Chinese and Japanese
// take in cl100k_base.
func estimate(b int) int { return (b + 2) / 3 }

// maxPiece is the longest piece the library tokenizes whole. A longer
// piece (a run of letters, punctuation or whitespace over 1 KiB, which
// no natural text has: a Chinese sentence of 300 characters is one
// letter run of 900 bytes) is tokenized in chunks of at most maxPiece
// bytes cut at rune boundaries, and the counts are summed; the sum can
// differ from the exact count by up to about two tokens per cut, either
// way (TestLongPieces). Tokenizing a single piece costs the library time
// linear in its length, so the bound is not needed for speed; it keeps
// a hostile piece from costing memory in proportion to its length.
const maxPiece = 1024

// countPieces counts s, which is valid UTF-8, as the sum of its pieces'
// counts. Pieces that end past limit bytes are not tokenized: from the
// first of them on, the rest of s is estimated, and estimated is true.
// m remembers counts for the rest of the request.
func (c *Counter) countPieces(e encIndex, s string, limit int, m *memo) (n int, estimated bool) {
	o200k := e == encO200k
	for i := 0; i < len(s); {
		start, end := nextPiece(s, i, o200k)
		if start == end {
			break
		}
		if end > limit {
			return n + estimate(len(s)-start), true
		}
		for p := s[start:end]; p != ""; {
			chunk := p
			if len(chunk) > maxPiece {
				cut := maxPiece
				for !utf8.RuneStart(chunk[cut]) {
					cut--
				}
				chunk = chunk[:cut]
			}
			n += c.countPiece(e, chunk, m)
			p = p[len(chunk):]
		}
		i = end
	}
	return n, false
}

// memo is a request's own small map from a piece's key to its count, in
// front of the shared cache of pieces: a prompt repeats its words, and a
// repeat found here costs neither the shared cache's lock nor its map.
// A slot holds the last piece whose hash selected it; one memo serves
// one encoding.
type memo [512]struct {
	hash uint64
	n    uint32 // the piece's length; 0 in an empty slot
	cnt  int32
}

var memos = sync.Pool{New: func() any { return new(memo) }}

// countPiece counts one piece, from the memo or the cache of pieces when
// it can.
func (c *Counter) countPiece(e encIndex, p string, m *memo) int {
	k := cacheKey{hash: maphash.String(c.seed, p), n: uint32(len(p)), enc: e, kind: kindLiteral}
	slot := &m[k.hash%uint64(len(m))]
	if slot.hash == k.hash && slot.n == k.n {
		return int(slot.cnt)
	}
	n, ok := c.pieces.lookup(k)
	if !ok {
		n = countText(e, p)
		c.pieces.store(k, n)
	}
	slot.hash, slot.n, slot.cnt = k.hash, k.n, int32(min(n, 1<<31-1))
	return n
}

func (c *cache) shard(k cacheKey) *shard {
	return &c.shards[k.hash>>60] // numShards is 16: the top 4 bits
}

func (c *cache) lookup(k cacheKey) (int, bool) {
	sh := c.shard(k)
	sh.mu.Lock()
	n, ok := sh.cur[k]
	if !ok {
		if n, ok = sh.prev[k]; ok {
			sh.put(k, n, c.gen)
		}
	}
	sh.mu.Unlock()
	return int(n), ok
}

func (c *cache) store(k cacheKey, n int) {
	sh := c.shard(k)
	sh.mu.Lock()
	sh.put(k, int32(min(n, 1<<31-1)), c.gen)
	sh.mu.Unlock()
}

// put adds k to the current generation, first retiring it if full. The
// retired previous generation's map is cleared and reused, so the cache
// allocates only while its maps first grow.
func (sh *shard) put(k cacheKey, n int32, gen int) {
	if _, ok := sh.cur[k]; !ok && len(sh.cur) >= gen {
		clear(sh.prev)
		sh.prev, sh.cur = sh.cur, sh.prev
	}
	if sh.cur == nil {
		sh.cur = make(map[cacheKey]int32)
	}
	sh.cur[k] = n
}
