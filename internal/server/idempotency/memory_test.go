package idempotency

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// answer is a stored response with a body of n bytes.
func answer(fp string, n int) *Response {
	return &Response{
		Fingerprint: FingerprintOf("POST", "/v1/chat/completions", []byte(fp)),
		Status:      200,
		Header:      http.Header{"Content-Type": {"application/json"}},
		Body:        []byte(strings.Repeat("x", n)),
	}
}

func key(i int) Key { return NewKey("test", fmt.Sprint(i)) }

func put(t *testing.T, s Store, k Key, r *Response) {
	t.Helper()
	if err := s.Finish(context.Background(), k, Claim{}, r); err != nil {
		t.Fatal(err)
	}
}

func has(t *testing.T, s Store, k Key) bool {
	t.Helper()
	r, h, err := s.Lookup(context.Background(), k, Claim{})
	if err != nil || h != nil {
		t.Fatalf("Lookup: %v, holder %v; a memory store neither errs nor claims", err, h)
	}
	return r != nil
}

func TestMemoryTTL(t *testing.T) {
	clock := newFakeClock()
	s := NewMemory(MemoryOptions{TTL: time.Minute, Now: clock.Now})
	put(t, s, key(1), answer("a", 10))
	clock.Advance(30 * time.Second)
	put(t, s, key(2), answer("b", 10))
	// A replay does not extend an answer's life.
	if !has(t, s, key(1)) {
		t.Fatal("an answer was gone before its TTL")
	}
	clock.Advance(30 * time.Second)
	if has(t, s, key(1)) {
		t.Error("an answer was replayed at its TTL")
	}
	if !has(t, s, key(2)) {
		t.Error("a younger answer expired with an older one")
	}
	clock.Advance(30 * time.Second)
	if n, b := s.Stats(); n != 0 || b != 0 {
		t.Errorf("after every TTL: %d entries, %d bytes held; want none", n, b)
	}
}

func TestMemoryBounds(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		s := NewMemory(MemoryOptions{MaxEntries: 3})
		for i := range 3 {
			put(t, s, key(i), answer("a", 10))
		}
		has(t, s, key(0)) // now the most recently used
		put(t, s, key(3), answer("a", 10))
		if has(t, s, key(1)) {
			t.Error("the least recently used answer survived past max_entries")
		}
		for _, i := range []int{0, 2, 3} {
			if !has(t, s, key(i)) {
				t.Errorf("answer %d was evicted; only the least recently used should go", i)
			}
		}
		if n, _ := s.Stats(); n != 3 {
			t.Errorf("%d entries held; want max_entries, 3", n)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		one := answer("a", 1000).Size()
		s := NewMemory(MemoryOptions{MaxBytes: 3 * one, MaxEntryBytes: 2 * one})
		for i := range 3 {
			put(t, s, key(i), answer("a", 1000))
		}
		if _, b := s.Stats(); b != 3*one {
			t.Fatalf("%d bytes held; want three answers, %d", b, 3*one)
		}
		// A larger answer makes room by evicting from the least
		// recently used end, as many as it takes.
		has(t, s, key(0))
		put(t, s, key(3), answer("a", 1900))
		if has(t, s, key(1)) || has(t, s, key(2)) {
			t.Error("answers survived past max_bytes")
		}
		if !has(t, s, key(0)) || !has(t, s, key(3)) {
			t.Error("the recently used answer, or the new one, was evicted")
		}
		if _, b := s.Stats(); b > 3*one {
			t.Errorf("%d bytes held; want at most max_bytes, %d", b, 3*one)
		}
	})
	t.Run("entry cap", func(t *testing.T) {
		s := NewMemory(MemoryOptions{MaxEntryBytes: 4096})
		put(t, s, key(1), answer("a", 5000))
		if has(t, s, key(1)) {
			t.Error("an answer over max_response_bytes was stored")
		}
		put(t, s, key(2), answer("a", 3000))
		if !has(t, s, key(2)) {
			t.Error("an answer under max_response_bytes was not stored")
		}
	})
	t.Run("reconfigured", func(t *testing.T) {
		s := NewMemory(MemoryOptions{})
		for i := range 5 {
			put(t, s, key(i), answer("a", 100*i))
		}
		s.Configure(MemoryOptions{MaxEntries: 2, MaxEntryBytes: answer("a", 350).Size()})
		if n, _ := s.Stats(); n != 2 {
			t.Errorf("%d entries after shrinking max_entries to 2", n)
		}
		if has(t, s, key(4)) {
			t.Error("an answer over the new entry cap stayed")
		}
	})
}

// A stored answer is held at its size and is never the caller's: the
// store copies the body out of the generation's buffer.
func TestMemoryCopiesTheBody(t *testing.T) {
	s := NewMemory(MemoryOptions{})
	r := answer("a", 10)
	put(t, s, key(1), r)
	r.Body[0] = 'y'
	got, _, _ := s.Lookup(context.Background(), key(1), Claim{})
	if got.Body[0] != 'x' {
		t.Error("the stored body changed with the caller's buffer")
	}
}
