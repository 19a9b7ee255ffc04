package admission

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// model is a deliberately naive restatement of the documented rules: plain
// slices, linear scans, no heap and no linked list, so that it is easy to
// believe and shares no structure with Core.
type model struct {
	cfg      Config
	inFlight []modelSlot
	// waiting is in queue order: appended on enqueue, never reordered.
	waiting []modelWaiter
	drain   modelDrain
	// took is every completed call's duration, oldest first.
	took []time.Duration
}

// modelDrain restates the drain meter as lists: every completion and
// every stretch of occupancy (slot-seconds, credited at the moment the
// in-flight count changed), summed afresh over the window on each ask.
type modelDrain struct {
	started     bool
	origin      time.Time
	last        time.Time
	held        int
	completions []time.Time
	accruals    []modelAccrual
	prior       float64
}

type modelAccrual struct {
	at      time.Time
	slotSec float64
}

func (d *modelDrain) observe(now time.Time) {
	if !d.started {
		d.started, d.origin, d.last = true, now, now
	}
}

func (d *modelDrain) occupy(now time.Time, inFlight int) {
	d.observe(now)
	if now.After(d.last) {
		d.accruals = append(d.accruals, modelAccrual{now, float64(d.held) * now.Sub(d.last).Seconds()})
		d.last = now
	}
	d.held = inFlight
}

func (d *modelDrain) record(now time.Time) {
	d.observe(now)
	d.completions = append(d.completions, now)
	if n, s := d.totals(now); n >= 8 && s > 0 {
		d.prior = float64(n) / s
	}
}

// inWindow: the 40 quarter-second buckets ending with now's.
func (d *modelDrain) inWindow(at, now time.Time) bool {
	b := func(t time.Time) int64 { return int64(t.Sub(d.origin) / (250 * time.Millisecond)) }
	return b(at) > b(now)-40
}

func (d *modelDrain) totals(now time.Time) (int, float64) {
	n, s := 0, 0.0
	for _, c := range d.completions {
		if d.inWindow(c, now) {
			n++
		}
	}
	for _, a := range d.accruals {
		if d.inWindow(a.at, now) {
			s += a.slotSec
		}
	}
	if now.After(d.last) {
		s += float64(d.held) * now.Sub(d.last).Seconds()
	}
	return n, s
}

func (d *modelDrain) slotRate(now time.Time) float64 {
	d.observe(now)
	n, s := d.totals(now)
	switch {
	case n >= 8 && s > 0:
		d.prior = float64(n) / s
		return d.prior
	case d.prior > 0:
		return (float64(n) + 4) / (s + 4/d.prior)
	case n > 0 && s > 0:
		return float64(n) / s
	}
	return 0
}

type modelSlot struct {
	t  Ticket
	r  Request
	at time.Time // when it took its slot
}

type modelWaiter struct {
	t       Ticket
	r       Request
	expires time.Time // zero: never
}

func (m *model) limit(l Limiter) int {
	if l == nil {
		return 0
	}
	return l.Limit()
}

func (m *model) fits(r Request) bool {
	extra := 0
	if r.Priority == Critical {
		extra = m.cfg.Reserved
	}
	if l := m.limit(m.cfg.Global); l > 0 && len(m.inFlight) >= l+extra {
		return false
	}
	if r.Scope >= 0 && r.Scope < len(m.cfg.Scopes) {
		if l := m.limit(m.cfg.Scopes[r.Scope]); l > 0 {
			n := 0
			for _, s := range m.inFlight {
				if s.r.Scope == r.Scope {
					n++
				}
			}
			if n >= l+extra {
				return false
			}
		}
	}
	return true
}

func (m *model) count(p Priority) int {
	n := 0
	for _, w := range m.waiting {
		if w.r.Priority == p {
			n++
		}
	}
	return n
}

// decide is Admit without the side effects: the verdict, the refusal
// reason, and the index in waiting of the waiter to displace (or -1).
func (m *model) decide(now time.Time, r Request) (Verdict, Reason, int) {
	if m.fits(r) {
		return Admitted, "", -1
	}
	// Critical may take every place; the others all but the reserved.
	depth, competing := m.cfg.MaxDepth-m.cfg.Reserved, m.count(Interactive)+m.count(Background)
	if r.Priority == Critical {
		depth, competing = m.cfg.MaxDepth, len(m.waiting)
	}
	if m.cfg.MaxWait <= 0 || depth <= 0 || (!r.Deadline.IsZero() && !now.Before(r.Deadline)) {
		return Rejected, ReasonQueueFull, -1
	}
	if q := m.cfg.MaxQueued[r.Priority]; q > 0 && m.count(r.Priority) >= q {
		return Rejected, ReasonClassFull, -1
	}
	if competing < depth && len(m.waiting) < m.cfg.MaxDepth {
		return Queued, "", -1
	}
	// Displace the newest waiter of the least important class below r.
	for q := Background; q > r.Priority; q-- {
		for i := len(m.waiting) - 1; i >= 0; i-- {
			if m.waiting[i].r.Priority == q {
				return Queued, "", i
			}
		}
	}
	return Rejected, ReasonQueueFull, -1
}

func (m *model) admit(now time.Time, t Ticket, r Request) (Verdict, Reason, Ticket) {
	v, why, victim := m.decide(now, r)
	var displaced Ticket
	if victim >= 0 {
		displaced = m.waiting[victim].t
		m.waiting = slices.Delete(m.waiting, victim, victim+1)
	}
	switch v {
	case Admitted:
		m.inFlight = append(m.inFlight, modelSlot{t, r, now})
		m.drain.occupy(now, len(m.inFlight))
	case Queued:
		exp := now.Add(m.cfg.MaxWait)
		if !r.Deadline.IsZero() && r.Deadline.Before(exp) {
			exp = r.Deadline
		}
		m.waiting = append(m.waiting, modelWaiter{t, r, exp})
	}
	return v, why, displaced
}

func (m *model) pump(now time.Time) []Ticket {
	var granted []Ticket
	for _, p := range Priorities() {
		for i := 0; i < len(m.waiting); {
			w := m.waiting[i]
			if w.r.Priority == p && m.fits(w.r) {
				m.waiting = slices.Delete(m.waiting, i, i+1)
				m.inFlight = append(m.inFlight, modelSlot{w.t, w.r, now})
				m.drain.occupy(now, len(m.inFlight))
				granted = append(granted, w.t)
				continue
			}
			i++
		}
	}
	return granted
}

func (m *model) release(now time.Time, t Ticket) ([]Ticket, bool) {
	i := slices.IndexFunc(m.inFlight, func(s modelSlot) bool { return s.t == t })
	if i < 0 {
		return nil, false
	}
	m.took = append(m.took, now.Sub(m.inFlight[i].at))
	m.inFlight = slices.Delete(m.inFlight, i, i+1)
	m.drain.occupy(now, len(m.inFlight))
	m.drain.record(now)
	return m.pump(now), true
}

func (m *model) leave(t Ticket) bool {
	i := slices.IndexFunc(m.waiting, func(w modelWaiter) bool { return w.t == t })
	if i < 0 {
		return false
	}
	m.waiting = slices.Delete(m.waiting, i, i+1)
	return true
}

func (m *model) expire(now time.Time) []Ticket {
	var out []Ticket
	m.waiting = slices.DeleteFunc(m.waiting, func(w modelWaiter) bool {
		if !w.expires.IsZero() && !w.expires.After(now) {
			out = append(out, w.t)
			return true
		}
		return false
	})
	return out
}

func (m *model) nextExpiry() (time.Time, bool) {
	var at time.Time
	for _, w := range m.waiting {
		if !w.expires.IsZero() && (at.IsZero() || w.expires.Before(at)) {
			at = w.expires
		}
	}
	return at, !at.IsZero()
}

// drainTime is DrainTime: when the (ahead+1)-th slot frees, everyone of
// class p or better ahead, each slot freeing after its call's expected
// rest (to the mean of the last 32 calls, or half-way to their longest,
// or, past the longest, as long again as it has run) and then once per
// round (the mean, or, with most slots past the longest, their median
// age if longer), found by freeing slots one by one; MaxWait
// (at least a second) before any call completed; within [MinRetryAfter,
// MaxRetryAfter].
func (m *model) drainTime(now time.Time, p Priority) time.Duration {
	ahead := 0
	for _, w := range m.waiting {
		if w.r.Priority <= p {
			ahead++
		}
	}
	d := max(m.cfg.MaxWait, time.Second)
	if len(m.took) > 0 {
		last := m.took[max(0, len(m.took)-32):]
		var sum, longest time.Duration
		for _, x := range last {
			sum += x
			longest = max(longest, x)
		}
		mean := max(sum.Seconds()/float64(len(last)), 1e-6)
		lo := max(longest.Seconds(), 1e-6)
		var free, over []float64
		for _, sl := range m.inFlight {
			a := max(now.Sub(sl.at).Seconds(), 0)
			r := a
			if a < lo {
				r = max(mean-a, (lo-a)/2, 0)
			} else {
				over = append(over, a)
			}
			free = append(free, r)
		}
		round := mean
		if 2*len(over) > len(free) {
			slices.Sort(over)
			round = max(round, over[len(over)/2])
		}
		var at float64
		if len(free) == 0 {
			l := 1
			if g := m.limit(m.cfg.Global); g > 0 {
				l = g
			}
			at = float64(ahead+1) * round / float64(l)
		}
		for range ahead + 1 {
			if len(free) == 0 {
				break
			}
			i := 0
			for j := range free {
				if free[j] < free[i] {
					i = j
				}
			}
			at = free[i]
			free[i] += round
		}
		d = time.Duration(at * float64(time.Second))
	}
	return min(max(d, MinRetryAfter), MaxRetryAfter)
}

// jittered reports whether got is a RetryAfter for drain time d: half to
// one and a half times it, within the bounds (and a nanosecond of slack
// for the model's own float arithmetic).
func jittered(got, d time.Duration) bool {
	lo := max(d/2, MinRetryAfter) - time.Microsecond
	hi := min(d+d/2, MaxRetryAfter) + time.Microsecond
	return got >= lo && got <= hi
}

// near reports whether two drain times agree up to float rounding.
func near(a, b time.Duration) bool {
	diff := a - b
	if diff < 0 {
		diff = -diff
	}
	return diff <= time.Microsecond+time.Duration(float64(max(a, b))*1e-9)
}

// life is a ticket's history as the test sees it from Core's answers alone.
type life uint8

const (
	unborn life = iota
	lifeWaiting
	lifeInFlight
	lifeDone
)

// run is one random sequence of operations against Core and the model.
type run struct {
	t     *testing.T
	rng   *rand.Rand
	cfg   Config
	lim   *dial
	c     *Core
	m     *model
	now   time.Time
	lives map[Ticket]life
	log   []string
	// seen counts what happened across all runs, so a change that stops
	// the generator reaching some rule shows up in -v output.
	seen map[string]int
}

func (r *run) fail(format string, args ...any) {
	r.t.Helper()
	tail := r.log
	if len(tail) > 25 {
		tail = tail[len(tail)-25:]
	}
	r.t.Fatalf("%s\n%s, config: global %d scopes %v depth %d reserved %d wait %v maxQueued %v\nlast ops:\n  %s",
		fmt.Sprintf(format, args...), r.log[0], r.lim.n, scopeLimits(r.cfg), r.cfg.MaxDepth, r.cfg.Reserved,
		r.cfg.MaxWait, r.cfg.MaxQueued, strings.Join(tail, "\n  "))
}

func scopeLimits(cfg Config) []int {
	var out []int
	for _, l := range cfg.Scopes {
		if l == nil {
			out = append(out, 0)
		} else {
			out = append(out, l.Limit())
		}
	}
	return out
}

// move checks and applies one lifecycle step.
func (r *run) move(t Ticket, from, to life, why string) {
	r.t.Helper()
	if got := r.lives[t]; got != from {
		r.fail("ticket %d %s: was in state %d, want %d", t, why, got, from)
	}
	r.lives[t] = to
}

func (r *run) randomRequest() Request {
	q := Request{Priority: Priority(r.rng.IntN(numPriorities)), Scope: r.rng.IntN(len(r.cfg.Scopes)+2) - 1}
	if r.rng.IntN(2) == 0 {
		// Quantised to 100ms so deadlines tie with each other and with
		// enqueue+MaxWait, and sometimes lie in the past.
		off := time.Duration(r.rng.IntN(60)-5) * 100 * time.Millisecond
		q.Deadline = r.now.Add(off)
	}
	return q
}

func (r *run) pick(state life) (Ticket, bool) {
	var ts []Ticket
	for t, l := range r.lives {
		if l == state {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return 0, false
	}
	slices.Sort(ts) // map order would make a failure irreproducible
	return ts[r.rng.IntN(len(ts))], true
}

func sameSet(a, b []Ticket) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func (r *run) grant(ts []Ticket, why string) {
	r.t.Helper()
	for _, t := range ts {
		r.move(t, lifeWaiting, lifeInFlight, why)
	}
	// Pump grants critical first, so if anything non-critical was granted
	// the last grant left the total within the plain limit.
	for _, t := range ts {
		if p := r.priorityOf(t); p != Critical {
			if l := r.lim.n; l > 0 && len(r.m.inFlight) > l {
				r.fail("%s granted %s ticket %d with %d in flight over limit %d", why, p, t, len(r.m.inFlight), l)
			}
		}
	}
}

func (r *run) priorityOf(t Ticket) Priority {
	for _, s := range r.m.inFlight {
		if s.t == t {
			return s.r.Priority
		}
	}
	return Critical
}

func (r *run) step() {
	r.t.Helper()
	switch k := r.rng.IntN(100); {
	case k < 40:
		q := r.randomRequest()
		if f, refused := r.c.Check(r.now, q); refused {
			// Check must agree with what Admit is about to do.
			if v, why, _ := r.m.decide(r.now, q); v != Rejected || f.Reason != why {
				r.fail("Check refused %+v for %+v, model says %s %q", f, q, verdictName(v), why)
			}
		} else if v, _, _ := r.m.decide(r.now, q); v == Rejected {
			r.fail("Check let %+v through, model refuses it", q)
		}
		wantRA := r.m.drainTime(r.now, q.Priority)
		res := r.c.Admit(r.now, q)
		r.seen[verdictName(res.Verdict)+" "+string(res.Refusal.Reason)]++
		r.seen["displaced"] += len(res.Displaced)
		r.log = append(r.log, fmt.Sprintf("admit %s scope %d deadline %v -> #%d %s %v displaced %v",
			q.Priority, q.Scope, dl(q.Deadline, r.now), res.Ticket, verdictName(res.Verdict), res.Refusal.Reason, res.Displaced))
		v, why, displaced := r.m.admit(r.now, res.Ticket, q)
		if res.Verdict != v {
			r.fail("Admit verdict %s, model %s", verdictName(res.Verdict), verdictName(v))
		}
		switch v {
		case Admitted:
			r.move(res.Ticket, unborn, lifeInFlight, "admitted")
		case Queued:
			r.move(res.Ticket, unborn, lifeWaiting, "queued")
		case Rejected:
			r.move(res.Ticket, unborn, lifeDone, "refused")
			if res.Refusal.Reason != why || res.Refusal.Ticket != res.Ticket || !jittered(res.Refusal.RetryAfter, wantRA) {
				r.fail("refusal %+v, model reason %q drain time %v", res.Refusal, why, wantRA)
			}
		}
		switch {
		case displaced == 0 && len(res.Displaced) != 0:
			r.fail("displaced %+v, model displaced nobody", res.Displaced)
		case displaced != 0 && (len(res.Displaced) != 1 || res.Displaced[0].Ticket != displaced ||
			res.Displaced[0].Reason != ReasonDisplaced):
			r.fail("displaced %+v, model displaced #%d", res.Displaced, displaced)
		case displaced != 0:
			r.move(displaced, lifeWaiting, lifeDone, "displaced")
		}
	case k < 60:
		t, ok := r.pick(lifeInFlight)
		if !ok {
			return
		}
		granted, ok := r.c.Release(r.now, t)
		r.log = append(r.log, fmt.Sprintf("release #%d -> %v %v", t, granted, ok))
		want, wantOK := r.m.release(r.now, t)
		if ok != wantOK || !slices.Equal(granted, want) {
			r.fail("Release(%d) = %v %v, model %v %v", t, granted, ok, want, wantOK)
		}
		r.move(t, lifeInFlight, lifeDone, "released")
		r.grant(granted, "Release")
		r.seen["granted by release"] += len(granted)
	case k < 68:
		t, ok := r.pick(lifeWaiting)
		if !ok {
			return
		}
		got := r.c.Leave(r.now, t)
		r.log = append(r.log, fmt.Sprintf("leave #%d -> %v", t, got))
		if want := r.m.leave(t); got != want {
			r.fail("Leave(%d) = %v, model %v", t, got, want)
		}
		r.move(t, lifeWaiting, lifeDone, "left")
	case k < 73:
		// Operations that must be refused and change nothing: Release of
		// a ticket that is not in flight, Leave of one that is not waiting.
		for _, st := range []life{lifeWaiting, lifeDone} {
			if t, ok := r.pick(st); ok {
				if g, ok := r.c.Release(r.now, t); ok || g != nil {
					r.fail("Release of ticket #%d in state %d = %v %v", t, st, g, ok)
				}
			}
		}
		for _, st := range []life{lifeInFlight, lifeDone} {
			if t, ok := r.pick(st); ok && r.c.Leave(r.now, t) {
				r.fail("Leave of ticket #%d in state %d succeeded", t, st)
			}
		}
		r.log = append(r.log, "bogus release/leave")
	case k < 93:
		// Move the clock, sometimes exactly onto the next expiry so the
		// boundary is exercised.
		if at, ok := r.c.NextExpiry(); ok && r.rng.IntN(3) == 0 && at.After(r.now) {
			r.now = at
		} else {
			r.now = r.now.Add(time.Duration(r.rng.IntN(30)) * 100 * time.Millisecond)
		}
		got := r.c.Expire(r.now)
		var ts []Ticket
		for _, f := range got {
			if f.Reason != ReasonWaitTimeout && f.Reason != ReasonDeadline {
				r.fail("Expire refused %+v", f)
			}
			ts = append(ts, f.Ticket)
			r.move(f.Ticket, lifeWaiting, lifeDone, "expired")
		}
		r.seen["expired"] += len(got)
		r.log = append(r.log, fmt.Sprintf("expire at +%v -> %v", r.now.Sub(t0), ts))
		if want := r.m.expire(r.now); !sameSet(ts, want) {
			r.fail("Expire = %v, model %v", ts, want)
		}
	default:
		// The limiter only rises here, so the in-flight bounds below
		// hold at every step, not just at the moment of a grant.
		if r.lim.n > 0 { // zero is unlimited: incrementing it would lower it
			r.lim.n++
		}
		granted := r.c.Pump(r.now)
		r.log = append(r.log, fmt.Sprintf("limit -> %d, pump -> %v", r.lim.n, granted))
		if want := r.m.pump(r.now); !slices.Equal(granted, want) {
			r.fail("Pump = %v, model %v", granted, want)
		}
		r.grant(granted, "Pump")
		r.seen["granted by pump"] += len(granted)
	}
	r.compare()
}

func dl(d, now time.Time) string {
	if d.IsZero() {
		return "none"
	}
	return d.Sub(now).String()
}

func (r *run) compare() {
	r.t.Helper()
	sn := r.c.Snapshot(r.now)
	if sn.InFlight != len(r.m.inFlight) {
		r.fail("in flight %d, model %d", sn.InFlight, len(r.m.inFlight))
	}
	for p := range Priority(numPriorities) {
		if sn.Queued[p] != r.m.count(p) {
			r.fail("queued %v, model has %d %s", sn.Queued, r.m.count(p), p)
		}
	}
	for i, n := range sn.ScopeInFlight {
		want := 0
		for _, s := range r.m.inFlight {
			if s.r.Scope == i {
				want++
			}
		}
		if n != want {
			r.fail("scope %d in flight %d, model %d", i, n, want)
		}
		if l := sn.ScopeLimits[i]; l > 0 && n > l+r.cfg.Reserved {
			r.fail("scope %d: %d in flight over limit %d + reserved %d", i, n, l, r.cfg.Reserved)
		}
	}
	if l := r.lim.n; l > 0 {
		if sn.InFlight > l+r.cfg.Reserved {
			r.fail("%d in flight over limit %d + reserved %d", sn.InFlight, l, r.cfg.Reserved)
		}
		nonCrit := 0
		for _, s := range r.m.inFlight {
			if s.r.Priority != Critical {
				nonCrit++
			}
		}
		if nonCrit > l {
			r.fail("%d non-critical in flight over limit %d", nonCrit, l)
		}
	}
	if nonCrit := r.m.count(Interactive) + r.m.count(Background); nonCrit > max(0, r.cfg.MaxDepth-r.cfg.Reserved) {
		r.fail("%d non-critical waiting over depth", nonCrit)
	}
	if n := len(r.m.waiting); n > r.cfg.MaxDepth {
		r.fail("%d waiting over max depth %d", n, r.cfg.MaxDepth)
	}
	at, ok := r.c.NextExpiry()
	wantAt, wantOK := r.m.nextExpiry()
	if ok != wantOK || !at.Equal(wantAt) {
		r.fail("NextExpiry %v %v, model %v %v", at, ok, wantAt, wantOK)
	}
	for p := range Priority(numPriorities) {
		got, want := r.c.DrainTime(r.now, p), r.m.drainTime(r.now, p)
		// DrainTime narrows its answer to a millionth of a call's length.
		if !near(got, want) && (got < want || got-want > want/500+time.Millisecond) {
			r.fail("DrainTime(%s) = %v, model %v", p, got, want)
		}
		if ra := r.c.RetryAfter(r.now, p); !jittered(ra, got) {
			r.fail("RetryAfter(%s) = %v for a drain time of %v", p, ra, got)
		}
	}
	// Lifecycle and model agree on who is where: no ticket is both
	// waiting and in flight.
	for _, s := range r.m.inFlight {
		if r.lives[s.t] != lifeInFlight {
			r.fail("model has #%d in flight, lifecycle says %d", s.t, r.lives[s.t])
		}
	}
	for _, w := range r.m.waiting {
		if r.lives[w.t] != lifeWaiting {
			r.fail("model has #%d waiting, lifecycle says %d", w.t, r.lives[w.t])
		}
	}
}

// drain ends a run: every waiter leaves and every slot comes home, after
// which Core must be empty and every ticket must have ended exactly once.
func (r *run) drain() {
	r.t.Helper()
	for {
		t, ok := r.pick(lifeWaiting)
		if !ok {
			break
		}
		if !r.c.Leave(r.now, t) || !r.m.leave(t) {
			r.fail("final Leave(%d) failed", t)
		}
		r.move(t, lifeWaiting, lifeDone, "left at the end")
	}
	for {
		t, ok := r.pick(lifeInFlight)
		if !ok {
			break
		}
		if g, ok := r.c.Release(r.now, t); !ok || len(g) != 0 {
			r.fail("final Release(%d) = %v %v", t, g, ok)
		}
		r.m.release(r.now, t)
		r.move(t, lifeInFlight, lifeDone, "released at the end")
	}
	r.compare()
	if sn := r.c.Snapshot(r.now); sn.InFlight != 0 || sn.Queued != [3]int{} || sn.OldestWait != 0 {
		r.fail("not empty at the end: %+v", sn)
	}
	if r.c.entries.Len() != 0 || len(r.c.expiry) != 0 {
		r.fail("empty Core still holds %d entries, %d expiries", r.c.entries.Len(), len(r.c.expiry))
	}
	for t, l := range r.lives {
		if l != lifeDone {
			r.fail("ticket #%d ended in state %d", t, l)
		}
	}
}

func randomConfig(rng *rand.Rand, lim *dial) Config {
	cfg := Config{
		Global:   lim,
		MaxDepth: rng.IntN(7),
		Reserved: rng.IntN(3),
		MaxWait:  []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}[rng.IntN(4)],
	}
	for range rng.IntN(3) {
		if rng.IntN(4) == 0 {
			cfg.Scopes = append(cfg.Scopes, nil)
		} else {
			cfg.Scopes = append(cfg.Scopes, Fixed(rng.IntN(4)))
		}
	}
	for p := range cfg.MaxQueued {
		if rng.IntN(3) == 0 {
			cfg.MaxQueued[p] = 1 + rng.IntN(3)
		}
	}
	return cfg
}

func TestCoreMatchesModel(t *testing.T) {
	const runs, ops = 2000, 80
	seen := map[string]int{}
	for seed := range uint64(runs) {
		rng := rand.New(rand.NewPCG(seed, 0x5111ce))
		// Mostly a small limit, so the queue is in play; now and then none.
		lim := &dial{n: 1 + rng.IntN(3)}
		if rng.IntN(10) == 0 {
			lim.n = 0
		}
		cfg := randomConfig(rng, lim)
		r := &run{
			t: t, rng: rng, cfg: cfg, lim: lim, c: NewCore(cfg),
			m:     &model{cfg: cfg},
			now:   t0.Add(time.Duration(rng.IntN(4)) * 100 * time.Millisecond),
			lives: map[Ticket]life{}, seen: seen,
		}
		r.log = append(r.log, fmt.Sprintf("seed %d", seed))
		for range ops {
			r.step()
		}
		r.drain()
	}
	t.Logf("events over %d runs: %v", runs, seen)
	for _, k := range []string{"admitted ", "queued ", "rejected queue_full", "rejected class_full",
		"displaced", "expired", "granted by release", "granted by pump"} {
		if seen[k] == 0 {
			t.Errorf("the generator never produced %q", k)
		}
	}
}
