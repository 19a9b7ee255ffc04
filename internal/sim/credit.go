package sim

import (
	"time"

	fleetcore "github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// A fleet's replicas hold credit on each key's shared budget, taken from
// the store ahead of time, as the gateway's do (fleetstore's
// allotments): the rules are fleet.Credit's, and this file carries them
// to the simulator's in-memory store. A refill is one message to the
// store, which takes the chunk from the key's budget when the message
// arrives, after the store's latency, and the credit is there from that
// moment (the reply's way back is not modelled). Every CreditIdle/3
// while the store answers, each replica gives back the credit it has
// not used for CreditIdle and settles what it owes or is owed, at once.
// A crashed replica's credit is lost, refills in flight included: the
// fleet admits less, never more.

// refillMsg is a refill on its way to the store, indexed by its
// evRefill event's token.
type refillMsg struct {
	credit *fleetcore.Credit
	key    int
	chunk  [3]int64
}

// creditFor is rp's credit on key k's budget, made at the store's first
// answer for it.
func (f *fleet) creditFor(rp *replica, k int) *fleetcore.Credit {
	if rp.fl.credit == nil {
		rp.fl.credit = make([]*fleetcore.Credit, len(f.keys))
	}
	c := rp.fl.credit[k]
	if c == nil {
		c = fleetcore.NewCredit(f.limits[k])
		rp.fl.credit[k] = c
	}
	return c
}

// takeShared takes cost from key k's budget for rp while the store
// answers: from rp's credit when it covers it, else from the store.
func (f *fleet) takeShared(r *run, rp *replica, k int, cost quota.Cost) quota.Verdict {
	now := r.clock(r.now)
	amt := fleetcore.Units(cost)
	if rp.fl.credit != nil {
		if c := rp.fl.credit[k]; c != nil && c.Covers(amt) {
			c.Lend(now, amt)
			f.refill(r, rp, k, c)
			f.fromCredit++
			return quota.Verdict{OK: true}
		}
	}
	v := f.keys[k].Take(now, cost)
	f.fromStore++
	c := f.creditFor(rp, k)
	c.Saw(f.keys[k].Status(now), now)
	if v.OK {
		c.Note(now, amt)
		f.refill(r, rp, k, c)
	}
	return v
}

// settleShared settles a reservation of key k's budget while the store
// answers: against rp's credit once the store has answered it, else in
// the store.
func (f *fleet) settleShared(r *run, rp *replica, k int, reserved, used quota.Cost) {
	if rp.fl.credit != nil {
		if c := rp.fl.credit[k]; c != nil && c.Known() {
			c.Settle(fleetcore.Units(reserved), fleetcore.Units(used))
			return
		}
	}
	f.keys[k].Settle(r.clock(r.now), reserved, used)
}

// refill sends the refill c calls for, if any, to the store.
func (f *fleet) refill(r *run, rp *replica, k int, c *fleetcore.Credit) {
	chunk, ok := c.Refill(r.clock(r.now))
	if !ok {
		return
	}
	f.refills = append(f.refills, refillMsg{credit: c, key: k, chunk: chunk})
	r.seq++
	r.events.push(event{at: r.quantise(r.now + f.spec.StoreLatency()), order: order(classEngine, r.seq), kind: evRefill, rep: uint16(rp.idx), token: uint32(len(f.refills) - 1)})
}

// refilled: a refill reaches the store, which takes its chunk from the
// key's budget if it can; with the store down, it is lost.
func (f *fleet) refilled(r *run, e event) {
	m := f.refills[e.token]
	now := r.clock(r.now)
	if !f.storeUp(r) {
		m.credit.Refilled(now, m.chunk, quota.Verdict{}, [3]quota.Status{}, time.Time{}, true, fleetcore.CreditIdle)
		return
	}
	b := f.keys[m.key]
	v := b.Take(now, quota.Cost{Requests: m.chunk[0], InputTokens: m.chunk[1], OutputTokens: m.chunk[2]})
	m.credit.Refilled(now, m.chunk, v, b.Status(now), now, false, fleetcore.CreditIdle)
}

// sweep gives back idle credit and settles what each replica owes or
// is owed, while the store answers, every CreditIdle/3.
func (f *fleet) sweep(r *run) {
	if f.storeUp(r) {
		now := r.clock(r.now)
		for _, rp := range r.reps {
			for k, c := range rp.fl.credit {
				if c == nil {
					continue
				}
				amt, drop := c.Sweep(now, fleetcore.CreditIdle, false)
				switch {
				case amt != [3]int64{}:
					res, act := fleetcore.Settlement(amt)
					f.keys[k].Settle(now, res, act)
					c.Saw(f.keys[k].Status(now), now)
				case drop:
					rp.fl.credit[k] = nil
				}
			}
		}
	}
	if next := r.now + fleetcore.CreditIdle/3; next < r.sc.Duration {
		r.seq++
		r.events.push(event{at: r.quantise(next), order: order(classEngine, r.seq), kind: evSweep})
	}
}
