// Package tickets holds values by ticket: a map from uint64 to V for
// keys handed out one after another, as admission's tickets, the
// engine's request ids and a breaker's call ids are.
//
// A key's low bits name its slot in a ring, so a lookup is one index and
// one comparison rather than a hash. Keys live for different times, so
// a new key can find its slot still taken by an older one; it then goes
// to an overflow map, and when the overflow grows past an eighth of the
// ring the ring doubles (up to MaxSlots) and everything is placed anew.
// The ring grows to about the span of keys alive at once and no further.
package tickets

// MinSlots and MaxSlots bound the ring.
const (
	MinSlots = 64
	MaxSlots = 1 << 16
)

// Table is a map[K]V for keys handed out in order. The zero value is
// empty and ready to use. It is not safe for concurrent use.
type Table[K ~uint64, V any] struct {
	slots []slot[K, V]
	more  map[K]V
	n     int
}

type slot[K ~uint64, V any] struct {
	key  K
	used bool
	v    V
}

// Len is the number of keys held.
func (t *Table[K, V]) Len() int { return t.n }

// Get returns the value for key, and whether it is held.
func (t *Table[K, V]) Get(key K) (V, bool) {
	if len(t.slots) > 0 {
		if s := &t.slots[uint64(key)&uint64(len(t.slots)-1)]; s.used && s.key == key {
			return s.v, true
		}
	}
	if len(t.more) > 0 {
		v, ok := t.more[key]
		return v, ok
	}
	var zero V
	return zero, false
}

// Put holds v for key, replacing any value it had.
func (t *Table[K, V]) Put(key K, v V) {
	if len(t.slots) == 0 {
		t.slots = make([]slot[K, V], MinSlots)
	}
	if len(t.more) > 0 {
		if _, ok := t.more[key]; ok {
			t.more[key] = v
			return
		}
	}
	s := &t.slots[uint64(key)&uint64(len(t.slots)-1)]
	switch {
	case !s.used:
		*s = slot[K, V]{key: key, used: true, v: v}
		t.n++
	case s.key == key:
		s.v = v
	default:
		if t.more == nil {
			t.more = make(map[K]V)
		}
		t.more[key] = v
		t.n++
		if len(t.more) > len(t.slots)/8 && len(t.slots) < MaxSlots {
			t.grow()
		}
	}
}

// Delete drops key, reporting whether it was held.
func (t *Table[K, V]) Delete(key K) bool {
	if len(t.slots) > 0 {
		if s := &t.slots[uint64(key)&uint64(len(t.slots)-1)]; s.used && s.key == key {
			*s = slot[K, V]{}
			t.n--
			return true
		}
	}
	if _, ok := t.more[key]; ok {
		delete(t.more, key)
		t.n--
		return true
	}
	return false
}

// All calls yield for every key held and its value, in no particular
// order, until yield returns false. The table must not change meanwhile.
func (t *Table[K, V]) All(yield func(K, V) bool) {
	for i := range t.slots {
		if s := &t.slots[i]; s.used && !yield(s.key, s.v) {
			return
		}
	}
	for k, v := range t.more {
		if !yield(k, v) {
			return
		}
	}
}

// grow doubles the ring and places every key anew.
func (t *Table[K, V]) grow() {
	old, more := t.slots, t.more
	t.slots, t.more, t.n = make([]slot[K, V], 2*len(old)), nil, 0
	for i := range old {
		if s := &old[i]; s.used {
			t.Put(s.key, s.v)
		}
	}
	for k, v := range more {
		t.Put(k, v)
	}
}
