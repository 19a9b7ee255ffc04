package cache

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/server/redistest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testKey(scope, model string, n int) Key {
	k, _, err := KeyOf(Request{Scope: scope, Endpoint: chat, Model: model, Body: []byte(fmt.Sprintf(`{"n":%d}`, n))})
	if err != nil {
		panic(err)
	}
	return k
}

func entry(at time.Time, ttl, stale time.Duration, size int) *Entry {
	return &Entry{Body: bytes.Repeat([]byte("x"), size), Stored: at, TTL: ttl, Stale: stale, Input: 7, CachedInput: 2, Output: 3}
}

// The memory store never holds more than its bytes: the least recently
// used go first, a read counts as a use, and an entry larger than
// MaxEntryBytes is not kept.
func TestMemoryLRUBound(t *testing.T) {
	ctx := context.Background()
	const per = 1000
	s := NewMemory(MemoryOptions{MaxBytes: 10 * (per + entryOverhead + 2), MaxEntryBytes: 2000})
	for i := range 10 {
		if ok, _ := s.Put(ctx, testKey("a", "m", i), entry(t0, time.Hour, 0, per)); !ok {
			t.Fatalf("entry %d not stored", i)
		}
	}
	if n, b, _ := s.Stats(t0); n != 10 || b > 10*(per+entryOverhead+2) {
		t.Fatalf("%d entries, %d bytes", n, b)
	}
	// Use entry 0, then add one more: entry 1, the least recently used,
	// goes; 0 stays.
	if e, _ := s.Get(ctx, testKey("a", "m", 0), t0); e == nil {
		t.Fatal("entry 0 missing")
	}
	s.Put(ctx, testKey("a", "m", 10), entry(t0, time.Hour, 0, per))
	if e, _ := s.Get(ctx, testKey("a", "m", 1), t0); e != nil {
		t.Error("the least recently used entry was kept past the bound")
	}
	if e, _ := s.Get(ctx, testKey("a", "m", 0), t0); e == nil {
		t.Error("a recently read entry was evicted")
	}
	// A flood of new entries keeps the total within the bound.
	for i := range 1000 {
		s.Put(ctx, testKey("flood", "m", i), entry(t0, time.Hour, 0, 1+i%1500))
		if _, b, _ := s.Stats(t0); b > s.o.MaxBytes {
			t.Fatalf("after %d puts, %d bytes held; the bound is %d", i, b, s.o.MaxBytes)
		}
	}
	if ok, _ := s.Put(ctx, testKey("a", "m", 99), entry(t0, time.Hour, 0, 2000)); ok {
		t.Error("an entry over MaxEntryBytes was stored")
	}
}

// An entry is returned while its TTL and stale allowance last, with its
// freshness for the caller to judge, and dropped after.
func TestMemoryTTLAndStale(t *testing.T) {
	ctx := context.Background()
	s := NewMemory(MemoryOptions{})
	k := testKey("a", "m", 1)
	s.Put(ctx, k, entry(t0, time.Minute, 5*time.Minute, 10))
	short := testKey("a", "m", 2)
	s.Put(ctx, short, entry(t0, time.Second, 0, 10))
	for _, c := range []struct {
		at           time.Duration
		found, fresh bool
	}{
		{0, true, true},
		{59 * time.Second, true, true},
		{time.Minute, true, false},
		{6*time.Minute - time.Millisecond, true, false},
		{6 * time.Minute, false, false},
	} {
		e, _ := s.Get(ctx, k, t0.Add(c.at))
		if (e != nil) != c.found || (e != nil && e.Fresh(t0.Add(c.at)) != c.fresh) {
			t.Errorf("at %v: found %v (want %v)", c.at, e != nil, c.found)
		}
		if e != nil && e.Age(t0.Add(c.at)) != c.at {
			t.Errorf("at %v: age %v", c.at, e.Age(t0.Add(c.at)))
		}
	}
	// The expired entries hold no memory once the store is reached.
	if n, b, byModel := s.Stats(t0.Add(time.Hour)); n != 0 || b != 0 || len(byModel) != 0 {
		t.Errorf("expired entries still held: %d, %d bytes, %v", n, b, byModel)
	}
}

func TestMemoryClear(t *testing.T) {
	ctx := context.Background()
	s := NewMemory(MemoryOptions{})
	for i := range 3 {
		s.Put(ctx, testKey("tenant:a", "m1", i), entry(t0, time.Hour, 0, 10))
		s.Put(ctx, testKey("tenant:a", "m2", i), entry(t0, time.Hour, 0, 10))
		s.Put(ctx, testKey("tenant:b", "m1", i), entry(t0, time.Hour, 0, 10))
	}
	if _, _, by := s.Stats(t0); by["m1"].Entries != 6 || by["m2"].Entries != 3 {
		t.Errorf("by model: %v", by)
	}
	if n, _ := s.Clear(ctx, "tenant:a", "m1"); n != 3 {
		t.Errorf("cleared %d; want tenant a's 3 of m1", n)
	}
	if n, _ := s.Clear(ctx, "", "m2"); n != 3 {
		t.Errorf("cleared %d; want m2's 3", n)
	}
	if e, _ := s.Get(ctx, testKey("tenant:b", "m1", 0), t0); e == nil {
		t.Error("tenant b's entry went with a")
	}
	if n, _ := s.Clear(ctx, "", ""); n != 3 {
		t.Errorf("cleared %d; want the last 3", n)
	}
}

func TestEntryEncoding(t *testing.T) {
	e := entry(t0, 90*time.Second, time.Hour, 40)
	e.Validated = true
	got, err := decodeEntry(encodeEntry(e))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Stored.Equal(e.Stored) || got.TTL != e.TTL || got.Stale != e.Stale || !got.Validated ||
		got.Input != 7 || got.CachedInput != 2 || got.Output != 3 || !bytes.Equal(got.Body, e.Body) {
		t.Errorf("round trip: %+v", got)
	}
	for _, b := range [][]byte{nil, []byte("scache1"), []byte("other"), append([]byte("scache1"), 0xff, 0xff, 0xff)} {
		if _, err := decodeEntry(b); err == nil {
			t.Errorf("%q decoded", b)
		}
	}
}

// The fleet's store: an entry written by one replica is read by another
// until its TTL and stale allowance pass; a tenant's entries can be
// cleared; and the bytes written within the window stay within
// MaxBytes, so the entries alive do too.
func TestRedisStore(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	a := NewRedis(rdb, RedisOptions{Prefix: prefix, MaxBytes: 10_000, MaxEntryBytes: 3000, Window: time.Hour})
	b := NewRedis(rdb, RedisOptions{Prefix: prefix, MaxBytes: 10_000, MaxEntryBytes: 3000, Window: time.Hour})
	now := time.Now()
	k := testKey("tenant:a", "m", 1)
	if ok, err := a.Put(ctx, k, entry(now, time.Minute, time.Minute, 100)); !ok || err != nil {
		t.Fatalf("put: %v, %v", ok, err)
	}
	e, err := b.Get(ctx, k, now)
	if err != nil || e == nil || len(e.Body) != 100 || e.Input != 7 || e.TTL != time.Minute {
		t.Fatalf("the other replica reads %+v, %v", e, err)
	}
	if left := rdb.PTTL(ctx, a.name(k)).Val(); left <= time.Minute || left > 2*time.Minute {
		t.Errorf("the entry lives %v; want its TTL and stale allowance, 2m", left)
	}
	if e, _ := b.Get(ctx, k, now.Add(2*time.Minute)); e != nil {
		t.Error("an entry past its life was returned")
	}
	if e, _ := b.Get(ctx, testKey("tenant:b", "m", 1), now); e != nil {
		t.Error("another tenant's key found the entry")
	}
	if ok, _ := a.Put(ctx, testKey("tenant:a", "m", 2), entry(now, time.Minute, 0, 3000)); ok {
		t.Error("an entry over MaxEntryBytes was written")
	}
	// Fill the window's budget: writes stop short of MaxBytes.
	written := int64(100 + entryOverhead + len("tenant:a") + 1)
	for i := range 100 {
		ok, err := a.Put(ctx, testKey("tenant:b", "m", i), entry(now, time.Minute, 0, 1000))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			written += 1000 + entryOverhead + int64(len("tenant:b")+1)
		}
	}
	if written > 10_000 || written < 10_000-2000 {
		t.Errorf("%d bytes written within the window; want just under MaxBytes 10000", written)
	}
	var held int64
	for _, name := range rdb.Keys(ctx, prefix+"cache:*").Val() {
		if !strings.Contains(name, "{budget}") {
			held += rdb.StrLen(ctx, name).Val()
		}
	}
	if held > 10_000 {
		t.Errorf("the entries hold %d bytes; the bound is 10000", held)
	}
	// A slot older than the window no longer counts.
	later := now.Add(time.Hour + 10*time.Minute)
	if ok, err := a.Put(ctx, testKey("tenant:b", "m", 999), entry(later, time.Minute, 0, 1000)); !ok || err != nil {
		t.Errorf("a write a window later: %v, %v; want room again", ok, err)
	}
	n, err := b.Clear(ctx, "tenant:b", "")
	if err != nil || n < 5 {
		t.Errorf("cleared %d, %v; want tenant b's entries", n, err)
	}
	if e, _ := b.Get(ctx, k, now); e == nil {
		t.Error("clearing tenant b took tenant a's entry")
	}
	if n, _ := a.Clear(ctx, "", "m"); n != 1 {
		t.Errorf("clearing the model took %d; want the 1 left", n)
	}
}

// A Redis that never answers is an error within the caller's
// deadline, which the gateway takes for a miss (or an answer not
// stored), never a wait past it.
func TestRedisUnreachable(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Silent(t), ContextTimeoutEnabled: true, DialTimeout: time.Second, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	s := NewRedis(rdb, RedisOptions{Prefix: "x:"})
	for _, op := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"get", func(ctx context.Context) error { _, err := s.Get(ctx, testKey("a", "m", 1), time.Now()); return err }},
		{"put", func(ctx context.Context) error {
			_, err := s.Put(ctx, testKey("a", "m", 1), entry(time.Now(), time.Minute, 0, 10))
			return err
		}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		err := op.do(ctx)
		cancel()
		if err == nil {
			t.Errorf("%s: no error from a store that never answers", op.name)
		}
		// Generous for a loaded machine; the point is "not forever".
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %v past its 50ms deadline", op.name, d)
		}
	}
}
