package fleetstore

import (
	"context"
	"math"
	"math/bits"
	"time"

	"github.com/sluice-gw/sluice/internal/core/quota"
)

// Allotment mode (BudgetOptions.Allot): see "Allotments" in the package
// comment.
const (
	// allotLead is how much of this replica's recent rate a refill
	// aims to hold: enough that the next chunk arrives long before the
	// credit runs out.
	allotLead = 100 * time.Millisecond
	// allotTau is the time constant of the rate estimate.
	allotTau = 200 * time.Millisecond
	// allotShare: a replica holds at most 1/allotShare of a dimension's
	// burst (2%).
	allotShare = 50
	// DefaultAllotIdle is how long a budget's credit is held without a
	// Take before it goes back to Redis.
	DefaultAllotIdle = 150 * time.Millisecond
)

// allotment is one budget's credit on this replica: units taken from the
// shared budget in Redis and not yet handed out. b.amu guards it.
type allotment struct {
	limits quota.Limits
	// credit is what this replica may hand out without asking Redis.
	credit [3]int64
	// lent is what was handed out from credit and not refunded: a
	// refund goes back to credit up to it.
	lent [3]int64
	// pending is owed to (positive: overruns) or by (negative: refunds
	// and returned credit) the shared budget, until the next flush.
	pending [3]int64
	// rate is the decayed rate of this replica's takes, units a second;
	// last is the latest take's cost.
	rate   [3]float64
	rateAt time.Time
	last   [3]int64
	used   time.Time // latest take, local clock
	// st is the shared budget's status as Redis last answered, at stAt
	// (the scripts' clock).
	st        [3]quota.Status
	stAt      time.Time
	haveSt    bool
	refilling bool
	backoff   time.Time // no refill before it
}

// allotCap is the most credit one replica holds in a dimension.
func allotCap(x quota.Limit) int64 {
	return x.EffectiveBurst() / allotShare
}

// clock is the scripts' clock as this replica reads it.
func (b *Budgets) clock() time.Time {
	if b.pin != nil {
		return b.pin()
	}
	return b.now()
}

// allotFor returns name's allotment, creating it, and starts the loop
// that returns idle credit and flushes what is pending; b.amu is held.
func (b *Budgets) allotFor(name string, limits quota.Limits) *allotment {
	a := b.allots[name]
	if a == nil {
		a = &allotment{limits: limits}
		b.allots[name] = a
	}
	// Limits that change keep the credit: it is counted in units, and
	// the shared budget takes units back at its current rate.
	a.limits = limits
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
	if a == nil || !a.haveSt {
		return quota.Verdict{}, [3]quota.Status{}, false
	}
	a.limits = limits
	for d, x := range limits {
		if x.PerMinute > 0 && a.credit[d] < amt[d] {
			return quota.Verdict{}, [3]quota.Status{}, false
		}
	}
	if commit {
		for d, x := range limits {
			if x.PerMinute > 0 {
				a.credit[d] -= amt[d]
				a.lent[d] += amt[d]
			}
		}
		b.noteTake(name, a, amt)
	}
	return quota.Verdict{OK: true}, a.status(b.clock()), true
}

// tookShared notes a Take or Check Redis answered, and returns its
// status adjusted by this replica's credit.
func (b *Budgets) tookShared(name string, limits quota.Limits, amt [3]int64, commit bool, v quota.Verdict, st [3]quota.Status) [3]quota.Status {
	b.amu.Lock()
	defer b.amu.Unlock()
	a := b.allotFor(name, limits)
	a.st, a.stAt, a.haveSt = st, b.clock(), true
	if v.OK && commit {
		b.noteTake(name, a, amt)
	}
	return a.status(a.stAt)
}

// noteTake counts a take into the rate and starts a refill if the
// credit is running low; b.amu is held.
func (b *Budgets) noteTake(name string, a *allotment, amt [3]int64) {
	now := b.now()
	k := 0.0
	if dt := now.Sub(a.rateAt); dt >= 0 && !a.rateAt.IsZero() {
		k = math.Exp(-dt.Seconds() / allotTau.Seconds())
	}
	for d := range amt {
		a.rate[d] = a.rate[d]*k + float64(amt[d])/allotTau.Seconds()
		a.last[d] = amt[d]
	}
	a.rateAt, a.used = now, now

	if a.refilling || now.Before(a.backoff) || b.Mode() != Shared || b.isClosed() {
		return
	}
	var chunk [3]int64
	need, some := false, false
	for d, x := range a.limits {
		if x.PerMinute == 0 {
			continue
		}
		c := allotCap(x)
		if c < a.last[d] {
			return // not even one such request fits in a replica's share
		}
		target := min(c, max(int64(a.rate[d]*allotLead.Seconds()), a.last[d]))
		if a.credit[d] < a.last[d] || 2*a.credit[d] < target {
			need = true
		}
		chunk[d] = max(min(target, c-a.credit[d]), 0)
		some = some || chunk[d] > 0
	}
	if !need || !some {
		return
	}
	a.refilling = true
	b.wg.Add(1)
	go b.refill(name, a, a.limits, chunk)
}

// refill takes chunk from the shared budget, in one round trip, and only
// then adds it to the credit.
func (b *Budgets) refill(name string, a *allotment, limits quota.Limits, chunk [3]int64) {
	defer b.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), b.o.Timeout)
	r, err := b.run(ctx, takeScript, false, name, limits, chunk)
	cancel()
	b.amu.Lock()
	defer b.amu.Unlock()
	a.refilling = false
	if err != nil {
		// A reply lost after Redis took the chunk loses the chunk: the
		// fleet admits less, never more.
		a.backoff = b.now().Add(b.o.AllotIdle)
		return
	}
	a.st, a.stAt, a.haveSt = statuses(r, limits), b.clock(), true
	v := verdict(r)
	if !v.OK {
		wait := b.o.AllotIdle
		if !v.Never {
			wait = min(wait, v.RetryAfter)
		}
		a.backoff = b.now().Add(wait)
		return
	}
	for d := range chunk {
		a.credit[d] += chunk[d]
	}
}

// settleLocal settles against name's credit: an overrun is paid from the
// credit, or else owed; a refund goes back to the credit up to what was
// lent from it (and the cap), or else is owed back. Either is flushed to
// Redis within a tick. It reports false when this replica has no state
// for name (Redis is asked instead).
func (b *Budgets) settleLocal(name string, limits quota.Limits, res, act [3]int64) ([3]quota.Status, bool) {
	b.amu.Lock()
	defer b.amu.Unlock()
	a := b.allots[name]
	if a == nil || !a.haveSt || b.isClosed() {
		return [3]quota.Status{}, false
	}
	a.limits = limits
	for d, x := range limits {
		if x.PerMinute == 0 {
			continue
		}
		switch delta := act[d] - res[d]; {
		case delta > 0:
			paid := min(delta, a.credit[d])
			a.credit[d] -= paid
			a.pending[d] += delta - paid
		case delta < 0:
			back := min(-delta, a.lent[d], max(allotCap(x)-a.credit[d], 0))
			a.credit[d] += back
			a.lent[d] -= back
			a.pending[d] += delta + back
		}
	}
	return a.status(b.clock()), true
}

// adjust adds name's credit, less what it owes, to a status Redis gave.
func (b *Budgets) adjust(name string, st [3]quota.Status) [3]quota.Status {
	b.amu.Lock()
	defer b.amu.Unlock()
	a := b.allots[name]
	if a == nil {
		return st
	}
	for d := range st {
		if st[d].Limit > 0 {
			st[d].Remaining = min(max(st[d].Remaining+a.credit[d]-a.pending[d], 0), st[d].Burst)
		}
	}
	return st
}

// status is the shared budget's last status aged to now, plus the
// credit, less what is owed; b.amu is held.
func (a *allotment) status(now time.Time) [3]quota.Status {
	var s [3]quota.Status
	el := max(now.Sub(a.stAt), 0)
	for d, x := range a.limits {
		if x.PerMinute == 0 {
			continue
		}
		st := a.st[d]
		if st.Limit != x.PerMinute { // limits changed since
			st = quota.Status{Limit: x.PerMinute, Burst: x.EffectiveBurst()}
			st.Remaining = st.Burst
		}
		rem := st.Remaining
		if el > 0 {
			st.Reset = max(st.Reset-el, 0)
			// Remaining is Burst less ⌈backlog/T⌉, T = 1min/PerMinute.
			hi, lo := bits.Mul64(uint64(st.Reset), uint64(x.PerMinute))
			if hi < uint64(time.Minute) {
				q, r := bits.Div64(hi, lo, uint64(time.Minute))
				if r > 0 {
					q++
				}
				if q < uint64(st.Burst) {
					rem = max(rem, st.Burst-int64(q))
				}
			}
		}
		st.Remaining = min(max(rem+a.credit[d]-a.pending[d], 0), st.Burst)
		s[d] = st
	}
	return s
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
// in Redis, one round trip per budget. What Redis does not take stays
// pending for the next sweep.
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
		idle := now.Sub(a.used)
		if all || idle >= b.o.AllotIdle {
			for d := range a.credit {
				a.pending[d] -= a.credit[d]
				a.credit[d] = 0
			}
		}
		switch {
		case a.pending != [3]int64{}:
			fs = append(fs, flush{name, a.limits, a.pending})
			a.pending = [3]int64{}
		case a.credit == [3]int64{} && !a.refilling && idle >= 20*b.o.AllotIdle:
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
				a = &allotment{limits: f.limits}
				b.allots[f.name] = a
			}
			for d := range f.amt {
				a.pending[d] += f.amt[d]
			}
		} else if a != nil {
			a.st, a.stAt, a.haveSt = statuses(r, f.limits), b.clock(), true
		}
		b.amu.Unlock()
	}
}

// held reports name's credit and what it owes, for tests.
func (b *Budgets) held(name string) (credit, pending [3]int64, refilling bool) {
	b.amu.Lock()
	defer b.amu.Unlock()
	if a := b.allots[name]; a != nil {
		return a.credit, a.pending, a.refilling
	}
	return
}
