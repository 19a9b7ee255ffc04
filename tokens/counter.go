package tokens

import (
	"hash/maphash"
	"sync"
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
	return &Counter{
		seed: maphash.MakeSeed(),
		gen:  (maxEntries + 2*numShards - 1) / (2 * numShards),
	}
}

// Bound is the most entries the cache holds.
func (c *Counter) Bound() int { return 2 * numShards * c.gen }

// Len is the number of entries the cache holds now.
func (c *Counter) Len() int {
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
	if n, ok := c.lookup(k); ok {
		return n
	}
	n := countText(e, text)
	c.store(k, n)
	return n
}

// countRaw counts a slice of a request body: literal text (a string
// without escapes, or JSON text counted as written), or a string's raw
// content with escapes, which is decoded first. The key is the raw
// bytes, so a repeated message is found without decoding it.
func (c *Counter) countRaw(e encIndex, raw []byte, escaped bool) int {
	if len(raw) == 0 {
		return 0
	}
	k := cacheKey{hash: maphash.Bytes(c.seed, raw), n: uint32(len(raw)), enc: e, kind: kindLiteral}
	if escaped {
		k.kind = kindEscaped
	}
	if n, ok := c.lookup(k); ok {
		return n
	}
	text := raw
	if escaped {
		text = unquote(raw)
	}
	n := countText(e, string(text))
	c.store(k, n)
	return n
}

func (c *Counter) shard(k cacheKey) *shard {
	return &c.shards[k.hash>>60] // numShards is 16: the top 4 bits
}

func (c *Counter) lookup(k cacheKey) (int, bool) {
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

func (c *Counter) store(k cacheKey, n int) {
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
