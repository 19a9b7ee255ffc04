package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configure a Redis store.
type RedisOptions struct {
	// Prefix starts every name the store keeps (the fleet's prefix).
	Prefix string
	// MaxBytes bounds the bytes the cache writes within Window (default
	// 64 MiB); MaxEntryBytes is the largest entry written (default 1
	// MiB).
	MaxBytes, MaxEntryBytes int64
	// Window is the longest any entry lives: the longest TTL and stale
	// allowance of any model (default 10m). Every entry is gone Window
	// after it was written, so the bytes written within the last Window
	// bound the bytes the cache holds.
	Window time.Duration
}

// Redis is a Store in the fleet's Redis, shared by every replica. An
// entry is one string with the entry's whole life as its TTL:
//
//	<prefix>cache:<scope>:<model>:<key>   the stored answer, SET with PX
//	<prefix>cache:{budget}:<slot>         bytes written in one slot of time
//
// where scope and model are the first 8 bytes of their SHA-256 in hex
// (names, not secrets: the key's hash already holds them), so that one
// tenant's or model's entries can be found to clear them.
//
// Redis evicts by its own maxmemory policy, not by least recent use
// among these entries, so the bound is kept on what is written: the
// time Window is cut into 16 slots, each a counter of the bytes written
// in it that lives for a Window past its slot. A Put adds its entry's
// size to the current slot only if the slots of the last Window, with
// it, stay within MaxBytes; otherwise the answer is not stored. Since
// every entry expires within a Window of its write, the entries alive
// never take more than MaxBytes (a cleared entry's bytes are still
// counted until its slot ages out: the bound errs on the safe side).
// Slots are cut on the writing replica's clock; clocks that differ by
// seconds move a write to a neighbouring slot, no more.
type Redis struct {
	rdb redis.UniversalClient
	o   RedisOptions
}

var _ Store = (*Redis)(nil)

// budgetSlots is how many slots a Window is cut into.
const budgetSlots = 16

// NewRedis returns a store in rdb.
func NewRedis(rdb redis.UniversalClient, o RedisOptions) *Redis {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Minute
	}
	return &Redis{rdb: rdb, o: o}
}

func (s *Redis) name(k Key) string {
	return s.o.Prefix + "cache:" + short(k.Scope) + ":" + short(k.Model) + ":" + k.String()
}

func short(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// Get returns the entry under k, if Redis still holds it.
func (s *Redis) Get(ctx context.Context, k Key, now time.Time) (*Entry, error) {
	data, err := s.rdb.Get(ctx, s.name(k)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e, err := decodeEntry(data)
	if err != nil || !now.Before(e.Expires()) {
		return nil, nil // not one of ours, or expired on this clock
	}
	return e, nil
}

// budgetScript: KEYS the slots of the last Window, the current one
// last; ARGV the entry's size, MaxBytes, the slot's life in ms. Returns
// 1 when the size was added to the current slot, 0 when it would take
// the Window past MaxBytes.
var budgetScript = redis.NewScript(`
local sum = 0
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then sum = sum + tonumber(v) end
end
if sum + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return 0 end
redis.call('INCRBY', KEYS[#KEYS], ARGV[1])
redis.call('PEXPIRE', KEYS[#KEYS], ARGV[3])
return 1
`)

// slots names the budget's slots of the Window up to t, the current
// one last.
func (s *Redis) slots(t time.Time) (names []string, width time.Duration) {
	width = max(s.o.Window/budgetSlots, time.Second)
	cur := t.UnixMilli() / width.Milliseconds()
	first := t.Add(-s.o.Window).UnixMilli() / width.Milliseconds()
	base := s.o.Prefix + "cache:{budget}:"
	for i := first; i <= cur; i++ {
		names = append(names, base+strconv.FormatInt(i, 10))
	}
	return names, width
}

// Put writes e under k for its whole life, if it is within
// MaxEntryBytes and the Window's bytes have room for it.
func (s *Redis) Put(ctx context.Context, k Key, e *Entry) (bool, error) {
	life := e.Expires().Sub(e.Stored)
	size := e.Size(k)
	if size > s.o.MaxEntryBytes || life <= 0 {
		return false, nil
	}
	slots, width := s.slots(e.Stored)
	ok, err := budgetScript.Run(ctx, s.rdb, slots, size, s.o.MaxBytes, (s.o.Window + 2*width).Milliseconds()).Int()
	if err != nil || ok != 1 {
		return false, err
	}
	if err := s.rdb.Set(ctx, s.name(k), encodeEntry(e), life).Err(); err != nil {
		return false, err
	}
	return true, nil
}

// Clear drops the entries of scope and model ("" for any), found by a
// scan of their names.
func (s *Redis) Clear(ctx context.Context, scope, model string) (int, error) {
	pattern := s.o.Prefix + "cache:"
	for _, part := range []string{scope, model} {
		if part == "" {
			pattern += "*:"
		} else {
			pattern += short(part) + ":"
		}
	}
	pattern += "*"
	n := 0
	it := s.rdb.Scan(ctx, 0, pattern, 512).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		d, err := s.rdb.Unlink(ctx, batch...).Result()
		n += int(d)
		batch = batch[:0]
		return err
	}
	for it.Next(ctx) {
		if batch = append(batch, it.Val()); len(batch) == 512 {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := it.Err(); err != nil {
		return n, err
	}
	return n, flush()
}
