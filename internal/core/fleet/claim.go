package fleet

import (
	"math/bits"
	"time"
)

// A fleet's fixed concurrency limits (a provider's max_in_flight, the
// global one, a lane's) are one limit for the whole fleet. Dividing each
// by the live replicas is right once every replica counts the same
// fleet and holds no more calls than its share, and wrong at every
// change: a replica that joins takes its share at once while the others
// still run the calls they admitted under their larger one, so a limit
// of 10 going from one replica to two holds 15 calls for as long as the
// old calls last.
//
// So each replica holds a claim on the limits, kept in the store: a part
// of Whole, the same part of every limit. The store never lets the
// claims add up to more than Whole (Grant), and a replica admits, under
// each limit, only the calls its part gives it (Slots), none before the
// store granted it any. A replica's aim is an equal part of the fleet it
// counts (Target, by its Census); it asks for more only up to that aim,
// and gives back what it holds beyond it only once its calls in flight
// fit in what is left (Need). So a replica that joins takes its part out
// of what the others give back as their calls end, never on top of it,
// and the limits hold at every change of the fleet.
//
// Claim is one replica's side of this, Claims a store's, in memory (the
// gateway's store is Redis, fleetstore.Claims, whose script mirrors
// Grant).

// Whole is every fixed limit of the fleet, in parts: a replica holding
// p parts may hold about p/Whole of each limit's calls (Slots). It is
// 720720 (the least common multiple of 1 to 16) times 1024, so that an
// equal part is exact for up to 16 replicas and for every power of two,
// and so fine that rounding the parts adds no call to a fleet while its
// live replicas times a limit stay below Whole (about 7.4 × 10^8).
const Whole int64 = 720720 << 10

// Target is the part a replica aims to hold with live replicas counted
// (its Census): an equal part, Whole/live rounded down.
func Target(live int) int64 { return Whole / int64(max(live, 1)) }

// Slots is how many calls a replica holding parts (at most Target(live))
// may have in flight under a fixed limit (limit > 0), with live replicas
// counted. Holding its whole target it gets limit/live rounded down, at
// least 1, as if the limit were simply divided (so a limit below the
// live count gives every replica one call, and the fleet may hold up to
// live calls: the one case where the shares add up to more than a
// limit). Holding less, it gets limit·parts/Whole rounded down, possibly
// none: that is a replica joining while the others still hold theirs,
// and one that holds no part admits nothing.
//
// The shares add up to at most the limit whenever the parts add up to at
// most Whole, and live × limit < Whole, and limit ≥ live.
func Slots(limit int, parts int64, live int) int {
	if limit <= 0 || parts <= 0 {
		return 0
	}
	live = max(live, 1)
	if parts >= Target(live) {
		return max(1, limit/live)
	}
	return int(mulDiv(uint64(limit), uint64(parts), uint64(Whole), false))
}

// Load is one fixed limit as a replica holds it: the fleet's limit
// (whole, not divided) and this replica's calls in flight under it.
type Load struct {
	Limit, InFlight int
}

// Need is the fewest parts that cover a replica's calls in flight under
// every limit, with live replicas counted: in·Whole/limit rounded up,
// for the limit that needs most. A replica that gives its part back
// down to this admits no call the others' parts do not leave it. Calls
// within what the target gives (Slots at Target(live)) need no more
// than the target, so a replica relying on the one-call floor does not
// hold more than an equal part for it.
func Need(loads []Load, live int) int64 {
	t := Target(live)
	var need int64
	for _, l := range loads {
		if l.Limit <= 0 || l.InFlight <= 0 {
			continue
		}
		n := int64(min(mulDiv(uint64(l.InFlight), uint64(Whole), uint64(l.Limit), true), uint64(Whole)))
		if l.InFlight <= Slots(l.Limit, t, live) {
			n = min(n, t)
		}
		need = max(need, n)
	}
	return need
}

// mulDiv is a·b/c, rounded down or up, without overflowing.
func mulDiv(a, b, c uint64, up bool) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return ^uint64(0)
	}
	q, r := bits.Div64(hi, lo, c)
	if up && r > 0 {
		q++
	}
	return q
}

// Grant is the store's answer to a replica that asks for want parts
// while the other live replicas' claims add up to others: as much of it
// as they leave, none below zero. When the store lost its data since
// the replica last read it (lost: the fleet's epoch changed), it grants
// no more than held, the part the replica held: the others' claims are
// gone with the data and not yet written back, so what looks free is
// not.
func Grant(want, held, others int64, lost bool) int64 {
	if lost {
		want = min(want, held)
	}
	return max(0, min(want, Whole-others))
}

// Claim is one replica's claim on the fleet's fixed limits: the part of
// Whole the store last granted it, and when it may ask for more. The
// host asks the store at every heartbeat, and more often while the
// claim is not settled (Settled), with Ask's part; it passes the answer
// to Granted, or tells Missed that the store did not answer.
//
// The zero Claim holds nothing and has not been granted anything. A
// Claim is not safe for concurrent use; the host keeps it under a lock
// and calls Ask under the lock its decisions take too, so that no call
// is admitted between reading the calls in flight and giving part back.
type Claim struct {
	// Hold is how long a replica only re-asserts its part, asking for
	// no more, after the store lost its data or after it could not
	// reach the store: the liveness window (3 heartbeats), so that every
	// other live replica has written its own part back by then, and
	// what looks free in the store is free.
	Hold time.Duration

	held    int64
	granted bool
	// cut: the store did not answer the last ask.
	cut bool
	// settle: no more than held is asked for before it.
	settle time.Time
}

// Parts is the part the replica admits by, with live replicas counted:
// what the store granted, never above an equal part (Target), so that a
// replica gives up admitting beyond its new share the moment it counts
// a larger fleet, before it has given the part back. Before the store
// granted anything it is nothing, and the replica admits no call on a
// shared limit, unless it is alone (the store does not answer, or
// answers that the claims' key is broken): then it decides with an
// equal part of the fleet it counts, as a replica deciding alone does
// (with the whole of every limit when it never reached the store).
func (c *Claim) Parts(live int, alone bool) int64 {
	t := Target(live)
	switch {
	case c.granted:
		return min(c.held, t)
	case alone:
		return t
	}
	return 0
}

// want is the part to ask for at now: the target, or, holding more,
// what its calls in flight need, no less than the target and no more
// than it holds; no more than it holds while it is settling.
func (c *Claim) want(now time.Time, live int, loads []Load) int64 {
	w := max(Target(live), min(c.held, Need(loads, live)))
	if c.cut || now.Before(c.settle) {
		w = min(w, c.held)
	}
	return w
}

// Settled reports whether asking now would change nothing: the replica
// has been granted a part and wants neither more nor less. A host asks
// at every heartbeat all the same (the store forgets a claim not asked
// for within the liveness window), and more often while this is false.
func (c *Claim) Settled(now time.Time, live int, loads []Load) bool {
	return c.granted && !c.cut && c.want(now, live, loads) == c.held
}

// Ask is the part to ask the store for at now, with live replicas
// counted and loads this replica's calls under each fixed limit. When it
// is less than the part held, the held part drops to it at once, before
// the store hears of it, so that the replica admits nothing beyond what
// the store will count.
func (c *Claim) Ask(now time.Time, live int, loads []Load) int64 {
	w := c.want(now, live, loads)
	c.held = min(c.held, w)
	return w
}

// Held is the part the store last granted, as lowered by Ask since.
func (c *Claim) Held() int64 { return c.held }

// Granted takes the store's answer at now: the part it granted, and
// whether it found that it lost its data since this replica last read
// it (the fleet's epoch changed). After a loss, or after the store did
// not answer, the replica only re-asserts its part for Hold.
func (c *Claim) Granted(now time.Time, parts int64, lost bool) {
	c.held, c.granted = parts, true
	if lost || c.cut {
		c.settle = now.Add(c.Hold)
	}
	c.cut = false
}

// Missed records that the store did not answer an ask: what is held
// stands, and no more is asked for until Hold after it answers again.
func (c *Claim) Missed() { c.cut = true }

// Claims is a store's claims, in memory: each replica's granted part
// and when it last asked. A claim not asked for within Window is the
// claim of a replica that is gone, and counts no more. The zero Claims
// has a zero Window, so that a claim counts only at the instant it was
// asked for; set Window to the liveness window.
type Claims struct {
	Window time.Duration
	parts  map[string]claimed
}

type claimed struct {
	parts int64
	at    time.Time
}

// Claim answers replica id's ask for want parts at now, holding held
// (Grant), and records what it granted.
func (s *Claims) Claim(id string, want, held int64, now time.Time) int64 {
	if s.parts == nil {
		s.parts = map[string]claimed{}
	}
	var others int64
	for who, c := range s.parts {
		switch {
		case who == id:
		case now.Sub(c.at) > s.Window:
			delete(s.parts, who)
		default:
			others += c.parts
		}
	}
	g := Grant(want, held, others, false)
	if g > 0 {
		s.parts[id] = claimed{g, now}
	} else {
		delete(s.parts, id)
	}
	return g
}

// Drop forgets replica id's claim: it left the fleet.
func (s *Claims) Drop(id string) { delete(s.parts, id) }

// Total is the parts the claims live at now add up to.
func (s *Claims) Total(now time.Time) int64 {
	var n int64
	for _, c := range s.parts {
		if now.Sub(c.at) <= s.Window {
			n += c.parts
		}
	}
	return n
}
