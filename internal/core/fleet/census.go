package fleet

import "time"

// Census is one replica's count of the live replicas, the n it divides
// the fleet's fixed limits (and its budget shares) by. Each heartbeat
// that reaches the store counts the replicas that heartbeated within
// the liveness window; the Census turns those counts into the one to
// divide by.
//
// The rule: a replica divides by the largest count it has seen within
// the last Hold, never by less. A count that falls (a replica left, or
// the store lost its memory of the others) is believed only once it
// has stood for Hold; a count that rises is believed at once. So while
// the count is uncertain each replica takes the share of the largest
// fleet it saw recently, never more, and the shares add up to at most
// the whole: while a store just back (restarted empty, or resumed from
// a stall) has heard from only the first replicas to heartbeat again,
// they do not each take the whole limit.
//
// A store that stops answering freezes the count: what was known when
// it last answered holds, and when it answers again the count known
// then holds for Hold beside the new ones, however long it was away.
//
// Hold should be the liveness window (a replica is live while its last
// heartbeat is within it), so that every live replica has heartbeated
// into the store again before a lower count is believed.
//
// The zero Census counts 1 until it has seen a count. A Census is not
// safe for concurrent use; the host keeps it under a lock.
type Census struct {
	// Hold is how long a larger count outlives a smaller one.
	Hold time.Duration

	seen []sighting // counts within Hold of the latest, oldest first
	// before is the count known when the store stopped answering,
	// and back when it answered again (zero: no outage since).
	before int
	back   time.Time
	lost   bool
}

type sighting struct {
	at time.Time
	n  int
}

// Observe records a count n a heartbeat that reached the store made at
// now.
func (c *Census) Observe(now time.Time, n int) {
	n = max(n, 1)
	if c.lost {
		c.lost = false
		c.back = now
	}
	// Drop what Hold has passed, keeping the list short: one entry per
	// heartbeat within Hold.
	i := 0
	for i < len(c.seen) && now.Sub(c.seen[i].at) >= c.Hold {
		i++
	}
	c.seen = append(c.seen[:0], c.seen[i:]...)
	c.seen = append(c.seen, sighting{now, n})
}

// Lost records that a heartbeat at now did not reach the store: the
// count known now stands until the store answers again, and for Hold
// after.
func (c *Census) Lost(now time.Time) {
	if c.lost {
		return
	}
	c.lost = true
	c.before = c.latest()
}

// Count is the replica count to divide by at now: the largest count
// seen within Hold of now, and the one known before an outage while the
// store is away or back for less than Hold; at least 1.
func (c *Census) Count(now time.Time) int {
	if c.lost {
		return max(c.before, c.largest(now), 1)
	}
	n := c.largest(now)
	if !c.back.IsZero() && now.Sub(c.back) < c.Hold {
		n = max(n, c.before)
	}
	if n == 0 {
		n = c.latest() // nothing within Hold: the last count stands
	}
	return max(n, 1)
}

// Clone is a copy of c that changes independently of it: a host that
// replaces its membership (a reload) carries the census over.
func (c *Census) Clone() Census {
	d := *c
	d.seen = append([]sighting(nil), c.seen...)
	return d
}

// Latest is the count the last heartbeat that reached the store made,
// or 0 before any.
func (c *Census) Latest() int { return c.latest() }

func (c *Census) latest() int {
	if len(c.seen) == 0 {
		return c.before
	}
	return c.seen[len(c.seen)-1].n
}

func (c *Census) largest(now time.Time) int {
	n := 0
	for _, s := range c.seen {
		if now.Sub(s.at) < c.Hold {
			n = max(n, s.n)
		}
	}
	return n
}
