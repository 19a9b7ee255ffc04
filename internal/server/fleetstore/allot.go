package fleetstore

import (
	"context"
	"time"

	"github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// Allotment mode (BudgetOptions.Allot): see "Allotments" in the package
// comment. The rules (how much credit to take, when, what a settlement
// does to it, when it goes back) are fleet.Credit's; this file carries
// them over Redis: one refill or one flush is one script call, off the
// request path, from a goroutine of its own.

// DefaultAllotIdle is how long a budget's credit is held without a
// Take before it goes back to Redis.
const DefaultAllotIdle = fleet.CreditIdle

// clock is the scripts' clock as this replica reads it.
func (b *Budgets) clock() time.Time {
	if b.pin != nil {
		return b.pin()
	}
	return b.now()
}

// allotFor returns name's credit, creating it, and starts the loop that
// returns idle credit and flushes what is pending; b.amu is held.
func (b *Budgets) allotFor(name string, limits quota.Limits) *fleet.Credit {
	a := b.allots[name]
	if a == nil {
		a = fleet.NewCredit(limits)
		b.allots[name] = a
	}
	a.SetLimits(limits)
	if !b.tending && !b.isClosed() {
		b.tending = true
		b.wg.Add(1)
		go b.tend()
	}
	return a
}

func (b *Budgets) isClosed() bool {
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

// takeLocal answers a Take or Check from name's credit when it covers
// cost in every limited dimension.
func (b *Budgets) takeLocal(name string, limits quota.Limits, amt [3]int64, commit bool) (quota.Verdict, [3]quota.Status, bool) {
	b.amu.Lock()
	defer b.amu.Unlock()
	a := b.allots[name]
	if a == nil {
		return quota.Verdict{}, [3]quota.Status{}, false
	}
	a.SetLimits(limits)
	if !a.Covers(amt) {
		return quota.Verdict{}, [3]quota.Status{}, false
	}
	if commit {
		a.Lend(b.now(), amt)
		b.maybeRefill(name, a)
	}
	return quota.Verdict{OK: true}, a.Status(b.clock()), true
}

// tookShared notes a Take or Check Redis answered, and returns its
// status adjusted by this replica's credit.
func (b *Budgets) tookShared(name string, limits quota.Limits, amt [3]int64, commit bool, v quota.Verdict, st [3]quota.Status) [3]quota.Status {
	b.amu.Lock()
	defer b.amu.Unlock()
	a := b.allotFor(name, limits)
	at := b.clock()
	a.Saw(st, at)
	if v.OK && commit {
		a.Note(b.now(), amt)
		b.maybeRefill(name, a)
	}
	return a.Status(at)
}

// maybeRefill starts the refill a take calls for, if any, while Redis
// answers; b.amu is held.
func (b *Budgets) maybeRefill(name string, a *fleet.Credit) {
	if b.Mode() != Shared || b.isClosed() {
		return
	}
	chunk, ok := a.Refill(b.now())
	if !ok {
		return
	}
	b.wg.Add(1)
	go b.refill(name, a, a.Limits(), chunk)
}

// refill takes chunk from the shared budget, in one round trip, and only
// then adds it to the credit.
func (b *Budgets) refill(name string, a *fleet.Credit, limits quota.Limits, chunk [3]int64) {
	defer b.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), b.o.Timeout)
	r, err := b.run(ctx, takeScript, false, name, limits, chunk)
	cancel()
	b.amu.Lock()
	defer b.amu.Unlock()
	if err != nil {
		a.Refilled(b.now(), chunk, quota.Verdict{}, [3]quota.Status{}, time.Time{}, true, b.o.AllotIdle)
		return
	}
	a.Refilled(b.now(), chunk, verdict(r), statuses(r, limits), b.clock(), false, b.o.AllotIdle)
}

// settleLocal settles against name's credit (fleet.Credit.Settle); what
// it owes or is owed is flushed to Redis within a tick. It reports
// false when this replica has no state for name (Redis is asked
// instead).
func (b *Budgets) settleLocal(name string, limits quota.Limits, res, act [3]int64) ([3]quota.Status, bool) {
	b.amu.Lock()
	defer b.amu.Unlock()
	a := b.allots[name]
	if a == nil || !a.Known() || b.isClosed() {
		return [3]quota.Status{}, false
	}
	a.SetLimits(limits)
	a.Settle(res, act)
	return a.Status(b.clock()), true
}

// adjust adds name's credit, less what it owes, to a status Redis gave.
func (b *Budgets) adjust(name string, st [3]quota.Status) [3]quota.Status {
	b.amu.Lock()
	defer b.amu.Unlock()
	a := b.allots[name]
	if a == nil {
		return st
	}
	return a.Adjust(st)
}

// tend returns idle credit and flushes what is pending, every
// AllotIdle/3, until Close.
func (b *Budgets) tend() {
	defer b.wg.Done()
	t := time.NewTicker(b.o.AllotIdle / 3)
	defer t.Stop()
	for {
		select {
		case <-b.closed:
			return
		case <-t.C:
		}
		if b.Mode() == Shared {
			b.sweep(false)
		}
	}
}

// sweep gives back the credit of budgets idle for AllotIdle (every
// budget's, with all set) and settles what each budget owes or is owed
// in Redis, one round trip per budget (fleet.Credit.Sweep). What Redis
// does not take stays pending for the next sweep.
func (b *Budgets) sweep(all bool) {
	type flush struct {
		name   string
		limits quota.Limits
		amt    [3]int64
	}
	var fs []flush
	now := b.now()
	b.amu.Lock()
	for name, a := range b.allots {
		amt, drop := a.Sweep(now, b.o.AllotIdle, all)
		switch {
		case amt != [3]int64{}:
			fs = append(fs, flush{name, a.Limits(), amt})
		case drop:
			delete(b.allots, name)
		}
	}
	b.amu.Unlock()
	for _, f := range fs {
		ctx, cancel := context.WithTimeout(context.Background(), b.o.Timeout)
		r, err := b.run(ctx, settleScript, false, f.name, f.limits, f.amt)
		cancel()
		b.amu.Lock()
		a := b.allots[f.name]
		if err != nil {
			if a == nil {
				a = fleet.NewCredit(f.limits)
				b.allots[f.name] = a
			}
			a.Unflushed(f.amt)
		} else if a != nil {
			a.Saw(statuses(r, f.limits), b.clock())
		}
		b.amu.Unlock()
	}
}

// held reports name's credit and what it owes, for tests.
func (b *Budgets) held(name string) (credit, pending [3]int64, refilling bool) {
	b.amu.Lock()
	defer b.amu.Unlock()
	if a := b.allots[name]; a != nil {
		return a.Held()
	}
	return
}
