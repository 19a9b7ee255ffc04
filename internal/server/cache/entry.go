package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"time"
)

// Entry is one stored answer: a complete answer, whole, in the dialect
// of the endpoint its key names, never modified once stored (lookups
// share it).
type Entry struct {
	// Body is the whole answer, as a client that did not stream would
	// have it; a streamed request's answer is stored collected so.
	Body []byte
	// Stored is when the answer was stored; TTL how long it is fresh
	// after that; Stale how long past TTL it is kept, for an answer when
	// no target can give one (0: not kept).
	Stored     time.Time
	TTL, Stale time.Duration
	// Validated: the request declared a structured output, and the
	// answer was checked and held to it.
	Validated bool
	// Input, CachedInput and Output are the answer's usage as its
	// provider reported it (Input excludes CachedInput), for the log
	// and the metrics of a hit.
	Input, CachedInput, Output int64
}

// Age is how old e is at now.
func (e *Entry) Age(now time.Time) time.Duration { return max(now.Sub(e.Stored), 0) }

// Fresh reports whether e is within its TTL at now.
func (e *Entry) Fresh(now time.Time) bool { return now.Before(e.Stored.Add(e.TTL)) }

// Expires is when e is no longer kept at all: its TTL and its stale
// allowance past.
func (e *Entry) Expires() time.Time { return e.Stored.Add(e.TTL + e.Stale) }

// entryOverhead approximates what holding an entry costs beyond its
// body: the map slot, the list and heap elements, the names.
const entryOverhead = 256

// Size is what holding e under k costs, about; stores bound their
// entries by it.
func (e *Entry) Size(k Key) int64 {
	return int64(len(e.Body)+len(k.Scope)+len(k.Model)) + entryOverhead
}

// Store keeps answers by key. A store that cannot answer returns an
// error, which its caller takes for a miss: a lost store costs the
// provider calls it would have saved, never a request.
type Store interface {
	// Get returns the entry stored under k, if one is kept at now
	// (fresh, or stale within its allowance); the caller judges its
	// age.
	Get(ctx context.Context, k Key, now time.Time) (*Entry, error)
	// Put stores e under k at e.Stored, replacing what was there,
	// unless it is larger than the store takes; stored false says it
	// was not kept.
	Put(ctx context.Context, k Key, e *Entry) (stored bool, err error)
	// Clear drops the entries of scope and of model (each "" for any)
	// and returns how many went.
	Clear(ctx context.Context, scope, model string) (int, error)
}

// The stored form of an Entry, for a store outside the process: a magic
// and version, then uvarints (stored, in Unix milliseconds; TTL and
// Stale in milliseconds; the usage; the flags), then the body to the
// end.
var entryMagic = []byte("scache1")

func encodeEntry(e *Entry) []byte {
	b := make([]byte, 0, len(e.Body)+len(entryMagic)+8*binary.MaxVarintLen64)
	b = append(b, entryMagic...)
	var flags uint64
	if e.Validated {
		flags |= 1
	}
	for _, n := range []int64{e.Stored.UnixMilli(), e.TTL.Milliseconds(), e.Stale.Milliseconds(), e.Input, e.CachedInput, e.Output} {
		b = binary.AppendUvarint(b, uint64(max(n, 0)))
	}
	b = binary.AppendUvarint(b, flags)
	return append(b, e.Body...)
}

var errEncoding = errors.New("cache: not a stored answer")

// maxStoredMillis bounds a stored TTL or stale allowance (about 300
// years), so that a corrupt entry cannot overflow a Duration.
const maxStoredMillis = 1e13

func decodeEntry(b []byte) (*Entry, error) {
	if len(b) < len(entryMagic) || string(b[:len(entryMagic)]) != string(entryMagic) {
		return nil, errEncoding
	}
	b = b[len(entryMagic):]
	var n [7]uint64
	for i := range n {
		v, w := binary.Uvarint(b)
		if w <= 0 || v > 1<<62 {
			return nil, errEncoding
		}
		n[i], b = v, b[w:]
	}
	if n[1] > maxStoredMillis || n[2] > maxStoredMillis {
		return nil, errEncoding
	}
	e := &Entry{
		Stored: time.UnixMilli(int64(n[0])), TTL: time.Duration(n[1]) * time.Millisecond, Stale: time.Duration(n[2]) * time.Millisecond,
		Input: int64(n[3]), CachedInput: int64(n[4]), Output: int64(n[5]), Validated: n[6]&1 != 0,
		Body: b,
	}
	return e, nil
}
