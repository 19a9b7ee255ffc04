package cache

import (
	"container/heap"
	"container/list"
	"context"
	"sync"
	"time"
)

// MemoryOptions bound a Memory store. Zero fields take the defaults.
type MemoryOptions struct {
	// MaxBytes caps what the entries take in all, by Entry.Size
	// (default 64 MiB).
	MaxBytes int64
	// MaxEntryBytes is the largest entry kept (default 1 MiB).
	MaxEntryBytes int64
}

// Memory defaults.
const (
	DefaultMaxBytes      = 64 << 20
	DefaultMaxEntryBytes = 1 << 20
)

func (o MemoryOptions) withDefaults() MemoryOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = DefaultMaxEntryBytes
	}
	return o
}

// Memory is a Store in this process's memory, bounded in bytes: when an
// entry would take the total past MaxBytes, the least recently used go
// first. An entry also goes once it is past its TTL and stale
// allowance: entries live for their own model's TTL, so they are found
// by when they expire on a heap, and an expired entry holds no memory
// past the next call that reaches the store.
type Memory struct {
	mu      sync.Mutex
	o       MemoryOptions
	m       map[[32]byte]*item
	lru     list.List // front: the most recently used
	expiry  expiryHeap
	bytes   int64
	byModel map[string]*ModelStats
}

// ModelStats are one model's entries and their size.
type ModelStats struct {
	Entries int
	Bytes   int64
}

type item struct {
	key  Key
	e    *Entry
	size int64
	lru  *list.Element
	heap int // index in the expiry heap
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory store.
func NewMemory(o MemoryOptions) *Memory {
	return &Memory{o: o.withDefaults(), m: make(map[[32]byte]*item), byModel: make(map[string]*ModelStats)}
}

// Configure applies new bounds (a reloaded configuration's), dropping
// what they no longer allow.
func (s *Memory) Configure(o MemoryOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o = o.withDefaults()
	for _, it := range s.m {
		if it.size > s.o.MaxEntryBytes {
			s.remove(it)
		}
	}
	s.evict(0)
}

// Get returns the entry under k, if it is kept at now, and makes it the
// most recently used.
func (s *Memory) Get(_ context.Context, k Key, now time.Time) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	it := s.m[k.Sum]
	if it == nil {
		return nil, nil
	}
	s.lru.MoveToFront(it.lru)
	return it.e, nil
}

// Put stores e under k, unless it is larger than MaxEntryBytes or
// already expired; then the least recently used entries go until the
// total is within MaxBytes.
func (s *Memory) Put(_ context.Context, k Key, e *Entry) (bool, error) {
	size := e.Size(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(e.Stored)
	if size > s.o.MaxEntryBytes || !e.Stored.Before(e.Expires()) {
		return false, nil
	}
	if old := s.m[k.Sum]; old != nil {
		s.remove(old)
	}
	s.evict(size)
	it := &item{key: k, e: e, size: size}
	it.lru = s.lru.PushFront(it)
	heap.Push(&s.expiry, it)
	s.m[k.Sum] = it
	s.bytes += size
	ms := s.byModel[k.Model]
	if ms == nil {
		ms = &ModelStats{}
		s.byModel[k.Model] = ms
	}
	ms.Entries++
	ms.Bytes += size
	return true, nil
}

// Clear drops the entries of scope and model ("" for any).
func (s *Memory) Clear(_ context.Context, scope, model string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, it := range s.m {
		if (scope == "" || it.key.Scope == scope) && (model == "" || it.key.Model == model) {
			s.remove(it)
			n++
		}
	}
	return n, nil
}

// Stats reports the entries held and their size, in all and by model,
// at now.
func (s *Memory) Stats(now time.Time) (entries int, bytes int64, byModel map[string]ModelStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	byModel = make(map[string]ModelStats, len(s.byModel))
	for m, st := range s.byModel {
		byModel[m] = *st
	}
	return len(s.m), s.bytes, byModel
}

// expire drops the entries no longer kept at now. REQUIRES s.mu.
func (s *Memory) expire(now time.Time) {
	for len(s.expiry) > 0 && !now.Before(s.expiry[0].e.Expires()) {
		s.remove(s.expiry[0])
	}
}

// evict drops the least recently used entries until room more bytes
// fit within MaxBytes. REQUIRES s.mu.
func (s *Memory) evict(room int64) {
	for s.bytes+room > s.o.MaxBytes && s.lru.Len() > 0 {
		s.remove(s.lru.Back().Value.(*item))
	}
}

// remove drops one entry. REQUIRES s.mu.
func (s *Memory) remove(it *item) {
	s.lru.Remove(it.lru)
	heap.Remove(&s.expiry, it.heap)
	delete(s.m, it.key.Sum)
	s.bytes -= it.size
	if ms := s.byModel[it.key.Model]; ms != nil {
		ms.Entries--
		ms.Bytes -= it.size
		if ms.Entries == 0 {
			delete(s.byModel, it.key.Model)
		}
	}
}

// expiryHeap orders entries by when they expire, the soonest first.
type expiryHeap []*item

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].e.Expires().Before(h[j].e.Expires()) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heap, h[j].heap = i, j
}
func (h *expiryHeap) Push(x any) {
	it := x.(*item)
	it.heap = len(*h)
	*h = append(*h, it)
}
func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}
