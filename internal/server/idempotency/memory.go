package idempotency

import (
	"bytes"
	"container/list"
	"context"
	"sync"
	"time"
)

// MemoryOptions bound a Memory store. Zero fields take the defaults.
type MemoryOptions struct {
	// TTL is how long an answer is replayed after it was stored
	// (default 1h). A replay does not extend it: a key means one
	// request for a bounded time, not for as long as it is retried.
	TTL time.Duration
	// MaxEntries caps the answers held (default 10,000).
	MaxEntries int
	// MaxBytes caps what they hold in all, by Response.Size (default
	// 64 MiB).
	MaxBytes int64
	// MaxEntryBytes is the largest answer stored; a larger one is not
	// stored at all (default 1 MiB).
	MaxEntryBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Memory defaults.
const (
	DefaultTTL        = time.Hour
	DefaultMaxEntries = 10000
	DefaultMaxBytes   = 64 << 20
)

func (o MemoryOptions) withDefaults() MemoryOptions {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = DefaultMaxResponseBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Memory is a Store in this process's memory: a least-recently-used
// cache bounded by entries and by bytes, whose entries also expire TTL
// after they were stored. Since every entry lives for the same TTL,
// expiry order is insertion order, so expired entries are found from
// the oldest end of a second list in constant time per entry, and an
// expired entry never holds memory past the next call.
type Memory struct {
	mu    sync.Mutex
	o     MemoryOptions
	m     map[Key]*memEntry
	lru   list.List // front: the most recently used
	age   list.List // front: the oldest
	bytes int64
}

type memEntry struct {
	key      Key
	r        *Response
	size     int64
	expires  time.Time
	lru, age *list.Element
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory store.
func NewMemory(o MemoryOptions) *Memory {
	return &Memory{o: o.withDefaults(), m: make(map[Key]*memEntry)}
}

// Configure applies new bounds (a reloaded configuration's), evicting
// what they no longer allow. Entries already stored keep their expiry.
func (s *Memory) Configure(o MemoryOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o = o.withDefaults()
	for e := s.age.Front(); e != nil; {
		next := e.Next()
		if me := e.Value.(*memEntry); me.size > s.o.MaxEntryBytes {
			s.remove(me)
		}
		e = next
	}
	s.evict()
}

// Lookup returns the answer stored under k, if any and not expired. It
// never claims: within one process the flights table does.
func (s *Memory) Lookup(_ context.Context, k Key, _ Claim) (*Response, *Holder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	s.expire(now)
	e := s.m[k]
	if e == nil {
		return nil, nil, nil
	}
	if !now.Before(e.expires) {
		// Expired behind an older entry that outlives it (a reload
		// shortened the TTL): insertion order is expiry order only
		// while the TTL stays.
		s.remove(e)
		return nil, nil, nil
	}
	s.lru.MoveToFront(e.lru)
	return e.r, nil, nil
}

// has reports whether an unexpired answer is stored under k, without
// making it more recently used.
func (s *Memory) has(k Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	return e != nil && s.o.Now().Before(e.expires)
}

// Finish stores r under k for TTL, replacing what was there, unless it
// is larger than MaxEntryBytes; then the least recently used entries go
// until the bounds hold.
func (s *Memory) Finish(_ context.Context, k Key, _ Claim, r *Response) error {
	if r == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	s.expire(now)
	size := r.Size()
	if size > s.o.MaxEntryBytes {
		return nil
	}
	if old := s.m[k]; old != nil {
		s.remove(old)
	}
	// Held at its exact size: the generation's buffer grew by doubling.
	r = &Response{Fingerprint: r.Fingerprint, Status: r.Status, Header: r.Header, Body: bytes.Clone(r.Body)}
	e := &memEntry{key: k, r: r, size: size, expires: now.Add(s.o.TTL)}
	e.lru = s.lru.PushFront(e)
	e.age = s.age.PushBack(e)
	s.m[k] = e
	s.bytes += size
	s.evict()
	return nil
}

// Stats reports the entries held and their size.
func (s *Memory) Stats() (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.o.Now())
	return len(s.m), s.bytes
}

// expire drops the entries whose TTL has passed. REQUIRES s.mu.
func (s *Memory) expire(now time.Time) {
	for e := s.age.Front(); e != nil; e = s.age.Front() {
		me := e.Value.(*memEntry)
		if now.Before(me.expires) {
			return
		}
		s.remove(me)
	}
}

// evict drops the least recently used entries until the bounds hold.
// REQUIRES s.mu.
func (s *Memory) evict() {
	for len(s.m) > s.o.MaxEntries || s.bytes > s.o.MaxBytes {
		s.remove(s.lru.Back().Value.(*memEntry))
	}
}

// remove drops one entry. REQUIRES s.mu.
func (s *Memory) remove(e *memEntry) {
	s.lru.Remove(e.lru)
	s.age.Remove(e.age)
	delete(s.m, e.key)
	s.bytes -= e.size
}
