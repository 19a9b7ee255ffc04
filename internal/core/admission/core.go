package admission

import (
	"container/heap"
	"math/rand/v2"
	"time"

	"github.com/sluice-gw/sluice/internal/core/tickets"
)

// Ticket names one request inside Core from Admit until Release or refusal.
type Ticket uint64

// NoScope marks a request that is bound only by the global limit.
const NoScope = -1

// Request is what admission needs to know, all of it available from the
// headers alone.
type Request struct {
	Priority Priority
	// Scope indexes Config.Scopes (a provider), or NoScope.
	Scope int
	// Deadline is when the request's own time runs out; zero means none.
	// A waiter is refused no later than this, even if MaxWait is longer.
	Deadline time.Time
	// Held: the request waits however much room there is, until the host
	// releases it (Hold); waiters behind it are not held up by it.
	// Lifecycle holds a request while a probe decides whether its
	// provider is fit to take it.
	Held bool
	// Lane, from 1, names Config.Lanes[Lane-1], a share of capacity the
	// request draws on as well; 0 is none.
	Lane int
	// Tenant, with Config.FairTenants, is whose request this is: a slot
	// that frees goes to the waiter of the tenant with the fewest
	// requests in flight (the oldest such waiter), not simply the oldest.
	Tenant int
	// Degraded: the host already made it cheap because of pressure (a
	// smaller model, fewer tokens); failing fast does not refuse it at
	// the door, since degrading is the alternative to refusing.
	Degraded bool
}

// Config sets Core's limits.
type Config struct {
	// Global caps everything in flight. Nil means unlimited.
	Global Limiter
	// Scopes caps in-flight requests per scope; entry i serves Scope i.
	// A nil entry, or a limit of zero or less, means unlimited.
	Scopes []Limiter
	// MaxDepth caps the waiting room, counting Reserved places that only
	// critical may use. Zero disables waiting for non-critical requests.
	MaxDepth int
	// MaxWait caps how long any request may wait. Zero disables waiting.
	MaxWait time.Duration
	// Reserved is how many in-flight slots above the limits, and how many
	// queue places, belong to critical requests alone.
	Reserved int
	// MaxQueued caps the waiters of each class; zero leaves a class bound
	// only by MaxDepth.
	MaxQueued [numPriorities]int
	// MaxWaitFor, when set for a class, replaces MaxWait for it: a batch
	// (background) class may wait minutes for leftover capacity.
	MaxWaitFor [numPriorities]time.Duration
	// Headroom is how many global slots a class leaves free for the
	// classes above it: background work uses only what interactive
	// leaves.
	Headroom [numPriorities]int
	// Lanes cap the requests of a lane in flight (Request.Lane): a share
	// of capacity for large-context work, so that it cannot take all.
	// LaneMaxWait, when set for a lane, is how long its requests may wait
	// instead of their class's MaxWait.
	Lanes       []Limiter
	LaneMaxWait []time.Duration
	// Seed owns the jitter RetryAfter adds, so a simulation replays.
	Seed uint64
	// TimeScale multiplies the core's own times (timescale.go): the
	// drain meter's buckets and RetryAfter's floor, ceiling and
	// fallback. Zero means 1.
	TimeScale float64
	// FairTenants: within a class, freed slots go to the tenant with the
	// fewest requests in flight, so a tenant's backlog waits behind its
	// own requests, not in front of everyone else's. Off, each class is
	// served in arrival order.
	FairTenants bool
	// FailFast marks refusals Futile while their class is refused at
	// least as often as it is admitted, or in nearly every second of the
	// window (saturated), and refuses at once a request
	// that cannot start while most of its class's waiters leave the
	// queue unserved (see futileMeter).
	FailFast bool
	// Unhinted: the host tells its clients no Retry-After (a simulated
	// client that never reads one), so refusals carry none and the drain
	// estimate behind it, which reads every slot in flight, is not made.
	// Off (the default), every refusal has one.
	Unhinted bool
}

// Verdict is Admit's answer.
type Verdict uint8

const (
	// Admitted: the request holds a slot and must Release it exactly once.
	Admitted Verdict = iota
	// Queued: the request waits; a later Release, Pump or Expire settles it.
	Queued
	// Rejected: the request was refused and holds nothing.
	Rejected
)

// Reason says why a request was refused.
type Reason string

const (
	ReasonQueueFull   Reason = "queue_full"   // no place in the waiting room
	ReasonClassFull   Reason = "class_full"   // this class used its share of the waiting room
	ReasonDisplaced   Reason = "displaced"    // a more important newcomer took the place
	ReasonWaitTimeout Reason = "wait_timeout" // waited MaxWait
	// ReasonDeadline: the request's own deadline came while it waited;
	// the host answers it as a timeout (504), not as a refusal.
	ReasonDeadline Reason = "deadline"
	// ReasonUnavailable: every target's breaker turned the request away
	// (decided by lifecycle, which routes before it admits).
	ReasonUnavailable Reason = "no_healthy_target"
	// ReasonTooSlow: the request was in flight on a provider whose
	// breaker is open, with nowhere to move, and its deadline is out of
	// the provider's reach at its current latency (decided by lifecycle).
	ReasonTooSlow Reason = "provider_too_slow"
	// ReasonKeyBudget: the client's key is out of its per-minute budget
	// (a 429 the client's own pacing can fix).
	ReasonKeyBudget Reason = "key_budget"
	// ReasonLaneBudget: large-context work as a whole is out of its
	// per-minute budget.
	ReasonLaneBudget Reason = "large_context_budget"
	// ReasonStarved: most of the class's recent waiters left the queue
	// unserved, so it is refused at once rather than after waiting
	// (Config.FailFast).
	ReasonStarved Reason = "class_starved"
)

// Refusal reports a request refused, and when a retry is likely to be served.
type Refusal struct {
	Ticket     Ticket
	Priority   Priority
	Reason     Reason
	RetryAfter time.Duration
	// Futile: the class is refused at least as often as admitted now, so
	// a retry is more likely refused than served, or it is saturated, so
	// a served retry only takes another's place (Config.FailFast).
	Futile bool
}

// Result is the outcome of Admit.
type Result struct {
	Ticket  Ticket
	Verdict Verdict
	// Refusal is set when Verdict is Rejected.
	Refusal Refusal
	// Displaced lists waiters refused to make room for this request.
	Displaced []Refusal
}

type state uint8

const (
	waiting state = iota + 1
	inFlight
)

type entry struct {
	ticket     Ticket
	req        Request
	state      state
	enqueued   time.Time
	expires    time.Time // zero: waits until Leave
	prev, next *entry
	heapIdx    int
	// started is when it took its slot; flightPrev and flightNext link
	// the slots in flight, oldest first (hint.go).
	started                time.Time
	startedAt              int64 // started as an offset from Core.flightBase
	flightPrev, flightNext *entry
}

// Core is the admission state machine. It is not safe for concurrent use
// (runner.Runner serialises calls to it) and never reads the clock.
type Core struct {
	cfg      Config
	inFlight int
	scopeIn  []int
	laneIn   []int
	// tenantIn counts each tenant's requests in flight (FairTenants).
	tenantIn map[int]int
	entries  tickets.Table[Ticket, *entry]
	// flightBase is the first slot's start: the slots' ages are read as
	// offsets from it (hint.go).
	flightBase  time.Time
	flightBased bool
	// spare holds entries freed from flight, for Admit to reuse.
	spare []*entry
	last  Ticket
	// One FIFO per class: head is the oldest waiter.
	head, tail [numPriorities]*entry
	queued     [numPriorities]int
	expiry     expiryHeap
	drain      drainMeter
	// calls remembers recent calls' durations, and flightHead/Tail list
	// the slots in flight, for DrainTime (hint.go).
	calls                   callTimes
	flightHead, flightTail  *entry
	remScratch, overScratch []float64
	// inheritedIn and inheritedScope count the calls of a replaced
	// configuration that Inherit holds room for (inherit.go).
	inheritedIn    int
	inheritedScope []int
	futile         futileMeter
	// tenantFutile is each tenant's own futileMeter (FairTenants).
	tenantFutile map[int]*futileMeter
	rng          *rand.Rand // RetryAfter's jitter
}

// NewCore returns an empty Core with the given limits.
func NewCore(cfg Config) *Core {
	return &Core{
		cfg:          cfg,
		scopeIn:      make([]int, len(cfg.Scopes)),
		laneIn:       make([]int, len(cfg.Lanes)),
		tenantIn:     map[int]int{},
		rng:          rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0xd4a1)),
		drain:        drainMeter{width: cfg.scaled(drainBucket)},
		futile:       futileMeter{width: cfg.scaled(futileBucket)},
		tenantFutile: map[int]*futileMeter{},
	}
}

// limitOf is l's limit and whether it limits at all: None is a limit
// of 0 slots, zero or less (or no Limiter) none.
func limitOf(l Limiter) (int, bool) {
	if l == nil {
		return 0, false
	}
	n := l.Limit()
	if n == None {
		return 0, true
	}
	return n, n > 0
}

// shownLimit is l's limit for a Snapshot: None shows as 0, as unlimited
// does, for the moments a fleet's replica holds no part of it.
func shownLimit(l Limiter) int {
	n, _ := limitOf(l)
	return n
}

// fits reports whether r can start now without passing a limit. Critical
// requests may use Reserved slots above each limit.
func (c *Core) fits(r Request) bool {
	extra := 0
	if r.Priority == Critical {
		extra = c.cfg.Reserved
	}
	if l, ok := limitOf(c.cfg.Global); ok && c.inFlight >= l+extra-c.cfg.Headroom[r.Priority] {
		return false
	}
	if r.Held {
		return false
	}
	if i := r.Lane - 1; i >= 0 && i < len(c.laneIn) {
		if l, ok := limitOf(c.cfg.Lanes[i]); ok && c.laneIn[i] >= l {
			return false
		}
	}
	if s := r.Scope; s >= 0 && s < len(c.scopeIn) {
		if l, ok := limitOf(c.cfg.Scopes[s]); ok && c.scopeIn[s] >= l+extra {
			return false
		}
	}
	return true
}

func (c *Core) start(now time.Time, e *entry) {
	e.state = inFlight
	c.inFlight++
	c.flightAdd(now, e)
	c.drain.occupy(now, c.inFlight)
	if s := e.req.Scope; s >= 0 && s < len(c.scopeIn) {
		c.scopeIn[s]++
	}
	if i := e.req.Lane - 1; i >= 0 && i < len(c.laneIn) {
		c.laneIn[i]++
	}
	if c.cfg.FairTenants {
		c.tenantIn[e.req.Tenant]++
	}
}

// Admit decides for a new request: it starts now, waits, or is refused.
func (c *Core) Admit(now time.Time, r Request) Result {
	c.last++
	e := c.newEntry()
	*e = entry{ticket: c.last, req: r, heapIdx: -1}
	res := Result{Ticket: e.ticket}
	if c.fits(r) {
		c.start(now, e)
		c.entries.Put(e.ticket, e)
		res.Verdict = Admitted
		c.tally(now, r, evDecided, evIn)
		return res
	}
	victim, why, ok := c.room(now, r)
	if !ok {
		c.spare = append(c.spare, e) // never listed anywhere
		return c.refuse(now, res, r, why)
	}
	c.tally(now, r, evDecided, evIn, evQueued)
	if victim != nil {
		c.unlink(victim)
		c.tally(now, victim.req, evRefused, evUnserved)
		res.Displaced = append(res.Displaced, c.refusal(now, victim, ReasonDisplaced))
	}
	wait := c.maxWait(r.Priority)
	if i := r.Lane - 1; i >= 0 && i < len(c.cfg.LaneMaxWait) && c.cfg.LaneMaxWait[i] > 0 {
		wait = c.cfg.LaneMaxWait[i]
	}
	e.expires = now.Add(wait)
	if !r.Deadline.IsZero() && r.Deadline.Before(e.expires) {
		e.expires = r.Deadline
	}
	c.enqueue(now, e)
	res.Verdict = Queued
	return res
}

// maxWait is how long a waiter of class p may wait.
func (c *Core) maxWait(p Priority) time.Duration {
	if d := c.cfg.MaxWaitFor[p]; d > 0 {
		return d
	}
	return c.cfg.MaxWait
}

// room finds a place in the queue for a request that does not fit now:
// ok with no victim, ok with a waiter to displace, or a reason to refuse.
// Critical may use every place, the Reserved ones included; the other
// classes share the rest. Any class may displace the newest waiter of a
// less important one.
func (c *Core) room(now time.Time, r Request) (victim *entry, why Reason, ok bool) {
	p := r.Priority
	switch {
	case c.maxWait(p) <= 0 || c.depth(p) == 0 || (!r.Deadline.IsZero() && !now.Before(r.Deadline)):
		return nil, ReasonQueueFull, false
	case c.cfg.MaxQueued[p] > 0 && c.queued[p] >= c.cfg.MaxQueued[p]:
		return nil, ReasonClassFull, false
	case c.cfg.FailFast && !r.Degraded && (c.meter(r.Tenant).starved(now, p) || c.overdue(now, r)):
		// Most of this class's recent waiters were refused after waiting,
		// or the queue ahead drains slower than this one may wait: it
		// would likely wait only to be refused.
		return nil, ReasonStarved, false
	case c.counted(p) < c.depth(p) && c.totalQueued() < c.cfg.MaxDepth:
		return nil, "", true
	}
	if victim = c.newestBelow(p); victim == nil {
		return nil, ReasonQueueFull, false
	}
	return victim, "", true
}

// Check reports, without changing admission's state, whether r would be
// refused at once if it arrived now. It lets a host refuse from the
// headers alone, before it reads a body.
func (c *Core) Check(now time.Time, r Request) (Refusal, bool) {
	if c.fits(r) {
		return Refusal{}, false
	}
	if _, why, ok := c.room(now, r); !ok {
		// Check's refusal is the request's only decision: Admit never
		// sees it.
		c.tally(now, r, evDecided, evRefused)
		return Refusal{Priority: r.Priority, Reason: why, RetryAfter: c.RetryAfter(now, r.Priority), Futile: c.isFutile(now, r)}, true
	}
	return Refusal{}, false
}

func (c *Core) refuse(now time.Time, res Result, r Request, why Reason) Result {
	p := r.Priority
	c.tally(now, r, evDecided, evRefused)
	res.Verdict = Rejected
	res.Refusal = Refusal{Ticket: res.Ticket, Priority: p, Reason: why, RetryAfter: c.RetryAfter(now, p), Futile: c.isFutile(now, r)}
	return res
}

// refusal refuses a waiter (the host counted it with waiterRefused, or
// Expire does).
func (c *Core) refusal(now time.Time, e *entry, why Reason) Refusal {
	p := e.req.Priority
	return Refusal{Ticket: e.ticket, Priority: p, Reason: why, RetryAfter: c.RetryAfter(now, p), Futile: c.isFutile(now, e.req)}
}

// overdue reports whether r, queued now, would likely be refused at the
// end of its wait: the waiters ahead of it, and the more important
// requests that will keep arriving ahead of it, take the gateway's
// measured drain for longer than r may wait. Refusing a request that
// would have been served costs more than letting a doomed one wait, so
// the drain is the faster of the last ten seconds' and the last
// second's (a recovery shows in the second long before the window), and
// only a measured rate counts: without one, r waits and the wait shows.
func (c *Core) overdue(now time.Time, r Request) bool {
	rate := max(c.drain.slotRate(now), c.drain.recentRate(now))
	if rate <= 0 {
		return false
	}
	ahead := c.waitersAhead(r)
	wait := c.maxWait(r.Priority)
	if !r.Deadline.IsZero() {
		wait = min(wait, r.Deadline.Sub(now))
	}
	drain := rate * float64(max(c.inFlight, 1))
	above := c.futile.inflow(now, r.Priority)
	if above < futileShare*drain {
		// r is not being overtaken so much as waiting for the queue
		// ahead to drain, and a slow spell can end all at once (calls
		// started in a brownout finish together): it waits, and the wait
		// shows.
		return false
	}
	left := drain - above
	if left <= 0 {
		return true // the classes above take the whole drain
	}
	return float64(ahead+1)/left > wait.Seconds()
}

// waitersAhead counts the waiters that a new request r would wait
// behind: every waiter of the classes above and of its own, or, served
// fairly (FairTenants), only those of its own class whose tenant has no
// more requests in flight than r's (pumpFair serves them first), so a
// flooding tenant's backlog does not make a quiet tenant's request look
// overdue.
func (c *Core) waitersAhead(r Request) int {
	p := min(r.Priority, numPriorities-1)
	ahead := 0
	for q := Critical; q < p; q++ {
		ahead += c.queued[q]
	}
	if !c.cfg.FairTenants {
		return ahead + c.queued[p]
	}
	mine := c.tenantIn[r.Tenant]
	for e := c.head[p]; e != nil; e = e.next {
		if c.tenantIn[e.req.Tenant] <= mine {
			ahead++
		}
	}
	return ahead
}

// isFutile reports whether a refusal of r is Futile now.
func (c *Core) isFutile(now time.Time, r Request) bool {
	return c.cfg.FailFast && c.meter(r.Tenant).futile(now, r.Priority)
}

// tally counts events of r's class on the class-wide meter and, with
// FairTenants, on r's tenant's own.
func (c *Core) tally(now time.Time, r Request, events ...int) {
	c.futile.count(now, r.Priority, events...)
	if c.cfg.FairTenants {
		c.meter(r.Tenant).count(now, r.Priority, events...)
	}
}

// meter is the meter that judges whether a request of this tenant would
// wait only to be refused, or retry only to be refused. Served fairly
// (FairTenants), a tenant's waiters go ahead of a flooding tenant's in
// their class, so the class's refusals say nothing about its chances:
// it is judged on its own. Otherwise the class is one queue, and the
// class-wide meter judges. Tenants are the config's, so the map is
// bounded by it.
func (c *Core) meter(tenant int) *futileMeter {
	if !c.cfg.FairTenants {
		return &c.futile
	}
	m := c.tenantFutile[tenant]
	if m == nil {
		m = &futileMeter{width: c.futile.width}
		c.tenantFutile[tenant] = m
	}
	return m
}

// depth is the number of places open to class p's waiters: every place
// for critical, all but the Reserved ones for the others.
func (c *Core) depth(p Priority) int {
	if p == Critical {
		return c.cfg.MaxDepth
	}
	return max(0, c.cfg.MaxDepth-c.cfg.Reserved)
}

// counted is the number of waiters that compete with class p for places:
// everyone for critical, the non-critical classes for the others.
func (c *Core) counted(p Priority) int {
	if p == Critical {
		return c.totalQueued()
	}
	return c.totalQueued() - c.queued[Critical]
}

func (c *Core) totalQueued() int {
	n := 0
	for _, q := range c.queued {
		n += q
	}
	return n
}

// newestBelow finds the newest waiter of the least important class that is
// less important than p.
func (c *Core) newestBelow(p Priority) *entry {
	for q := Priority(numPriorities - 1); q > p; q-- {
		if c.tail[q] != nil {
			return c.tail[q]
		}
	}
	return nil
}

func (c *Core) enqueue(now time.Time, e *entry) {
	p := e.req.Priority
	e.state = waiting
	e.enqueued = now
	e.prev = c.tail[p]
	if c.tail[p] != nil {
		c.tail[p].next = e
	} else {
		c.head[p] = e
	}
	c.tail[p] = e
	c.queued[p]++
	c.entries.Put(e.ticket, e)
	if !e.expires.IsZero() {
		heap.Push(&c.expiry, e)
	}
}

// unlink removes a waiter from its queue and forgets it.
func (c *Core) unlink(e *entry) {
	p := e.req.Priority
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head[p] = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail[p] = e.prev
	}
	e.prev, e.next = nil, nil
	c.queued[p]--
	if e.heapIdx >= 0 {
		heap.Remove(&c.expiry, e.heapIdx)
	}
	c.entries.Delete(e.ticket)
}

// Release returns an admitted request's slot and starts the waiters that
// now fit. ok is false if t was not in flight (a double release), in which
// case nothing changes.
func (c *Core) Release(now time.Time, t Ticket) (granted []Ticket, ok bool) {
	if !c.Free(now, t) {
		return nil, false
	}
	return c.Pump(now), true
}

// Free is Release without starting waiters, for a host that has calls of
// its own to place in the freed room first; it must Pump after.
func (c *Core) Free(now time.Time, t Ticket) bool {
	e, found := c.entries.Get(t)
	if !found || e.state != inFlight {
		return false
	}
	c.entries.Delete(t)
	c.inFlight--
	c.flightRemove(e)
	c.calls.add(now.Sub(e.started))
	c.drain.occupy(now, c.inFlight)
	if s := e.req.Scope; s >= 0 && s < len(c.scopeIn) {
		c.scopeIn[s]--
	}
	if i := e.req.Lane - 1; i >= 0 && i < len(c.laneIn) {
		c.laneIn[i]--
	}
	if c.cfg.FairTenants {
		if c.tenantIn[e.req.Tenant]--; c.tenantIn[e.req.Tenant] <= 0 {
			delete(c.tenantIn, e.req.Tenant)
		}
	}
	c.drain.record(now)
	if len(c.spare) < spareMax {
		c.spare = append(c.spare, e)
	}
	return true
}

// spareMax bounds the entries kept for reuse.
const spareMax = 1024

// newEntry returns an entry to fill in whole: one freed, or a new one.
// Only entries freed from flight are reused (Free), whose links are all
// undone; the simulator runs millions of requests through one Core.
func (c *Core) newEntry() *entry {
	if n := len(c.spare); n > 0 {
		e := c.spare[n-1]
		c.spare[n-1] = nil
		c.spare = c.spare[:n-1]
		return e
	}
	return new(entry)
}

// Pump starts every waiter that fits, most important class first and
// oldest first within a class. A waiter held back by its full scope does
// not block waiters bound for other scopes.
func (c *Core) Pump(now time.Time) []Ticket {
	if c.cfg.FairTenants {
		return c.pumpFair(now)
	}
	var granted []Ticket
	for p := range Priority(numPriorities) {
		for e := c.head[p]; e != nil; {
			next := e.next
			if c.fits(e.req) {
				c.unlink(e)
				c.start(now, e)
				c.entries.Put(e.ticket, e)
				granted = append(granted, e.ticket)
			} else if l, ok := limitOf(c.cfg.Global); p != Critical && ok && c.inFlight >= l {
				return granted // nothing non-critical can fit anywhere
			}
			e = next
		}
	}
	return granted
}

// Rescope moves a waiter to another scope (its provider's breaker opened
// and another target can serve it). It keeps its place in its class's
// queue, which is ordered by arrival, not by scope; the host should Pump
// after moving waiters. It reports false if t is not waiting.
func (c *Core) Rescope(t Ticket, scope int) bool {
	e, found := c.entries.Get(t)
	if !found || e.state != waiting {
		return false
	}
	e.req.Scope = scope
	return true
}

// Hold holds a waiter (see Request.Held) or releases it; the host should
// Pump after releasing waiters. It reports false if t is not waiting.
func (c *Core) Hold(t Ticket, held bool) bool {
	e, found := c.entries.Get(t)
	if !found || e.state != waiting {
		return false
	}
	e.req.Held = held
	return true
}

// Leave withdraws a waiter whose client gave up. It reports false if t was
// not waiting (already started or refused).
func (c *Core) Leave(now time.Time, t Ticket) bool {
	e, found := c.entries.Get(t)
	if !found || e.state != waiting {
		return false
	}
	c.unlink(e)
	return true
}

// Expire refuses every waiter whose wait has run out by now.
func (c *Core) Expire(now time.Time) []Refusal {
	var out []Refusal
	for len(c.expiry) > 0 && !c.expiry[0].expires.After(now) {
		e := c.expiry[0]
		c.unlink(e)
		why := ReasonWaitTimeout
		if d := e.req.Deadline; !d.IsZero() && !e.expires.Before(d) {
			why = ReasonDeadline
		}
		c.tally(now, e.req, evRefused, evUnserved)
		out = append(out, c.refusal(now, e, why))
	}
	return out
}

// NextExpiry is when the next waiter's wait runs out, if any waiter has a
// limit. The host arranges to call Expire then.
func (c *Core) NextExpiry() (time.Time, bool) {
	if len(c.expiry) == 0 {
		return time.Time{}, false
	}
	return c.expiry[0].expires, true
}

// Bounds on DrainTime and RetryAfter. The floor keeps a client that
// honours the header from coming straight back; the ceiling keeps one
// bad estimate from sending clients away for an hour.
const (
	MinRetryAfter = 50 * time.Millisecond
	MaxRetryAfter = 5 * time.Minute
)

// DrainTime estimates how long until a request of class p sent now would
// start: everyone of its class or better ahead of it must drain first,
// so it is the expected time until that many slots plus one free, read
// from the ages of the slots in flight against the durations of recent
// calls, at any moment (hint.go: at the start of a burst, after a quiet
// spell, and with every slot held by calls longer than any seen). With
// no completed call yet it falls back to MaxWait (at least a second),
// the longest any waiter is held. The result is within [MinRetryAfter,
// MaxRetryAfter].
func (c *Core) DrainTime(now time.Time, p Priority) time.Duration {
	ahead := 0
	for q := Critical; q <= p && q < numPriorities; q++ {
		ahead += c.queued[q]
	}
	d := max(c.cfg.MaxWait, c.cfg.scaled(time.Second))
	if s, ok := c.scheduleDrain(now, ahead+1); ok {
		d = s
	}
	return c.cfg.boundRetryAfter(d)
}

// RetryAfter is DrainTime spread by jitter, uniformly over half to one
// and a half times it: refused together, clients come back spread over
// the drain rather than as one wave. The jitter comes from Config.Seed.
// It is 0 when Config.Unhinted.
func (c *Core) RetryAfter(now time.Time, p Priority) time.Duration {
	if c.cfg.Unhinted {
		return 0
	}
	d := c.DrainTime(now, p)
	j := time.Duration(float64(d) * (0.5 + c.rng.Float64()))
	return c.cfg.boundRetryAfter(j)
}

// TakeExtra holds one more slot in a scope for a request that already
// holds its own: a hedge's second call. It never queues and never counts
// against the global limit (the request is counted once there); it
// reports false when the scope is full.
func (c *Core) TakeExtra(scope int) bool {
	if !c.Room(scope) {
		return false
	}
	if scope >= 0 && scope < len(c.scopeIn) {
		c.scopeIn[scope]++
	}
	return true
}

// ReleaseExtra returns a slot TakeExtra took and starts the waiters that
// now fit.
func (c *Core) ReleaseExtra(now time.Time, scope int) []Ticket {
	c.FreeExtra(scope)
	return c.Pump(now)
}

// FreeExtra is ReleaseExtra without starting waiters; the host must Pump
// after.
func (c *Core) FreeExtra(scope int) {
	if scope >= 0 && scope < len(c.scopeIn) {
		c.scopeIn[scope]--
	}
}

// Room reports whether TakeExtra(scope) would succeed.
func (c *Core) Room(scope int) bool {
	if scope < 0 || scope >= len(c.scopeIn) {
		return true
	}
	l, ok := limitOf(c.cfg.Scopes[scope])
	return !ok || c.scopeIn[scope] < l
}

// InFlight is the number of requests in flight in a scope, or globally
// for NoScope.
func (c *Core) InFlight(scope int) int {
	if scope >= 0 && scope < len(c.scopeIn) {
		return c.scopeIn[scope]
	}
	return c.inFlight
}

// LaneInFlight is the number of requests in flight in lane i (from 0,
// Config.Lanes[i]).
func (c *Core) LaneInFlight(i int) int {
	if i >= 0 && i < len(c.laneIn) {
		return c.laneIn[i]
	}
	return 0
}

// Snapshot is a read-only view of Core for metrics and tests.
type Snapshot struct {
	InFlight      int
	ScopeInFlight []int
	Queued        [numPriorities]int
	// OldestWait is the age of the oldest waiter of any class.
	OldestWait  time.Duration
	Limit       int
	ScopeLimits []int
}

// Snapshot reports the current state.
func (c *Core) Snapshot(now time.Time) Snapshot {
	s := Snapshot{
		InFlight:      c.inFlight,
		ScopeInFlight: append([]int(nil), c.scopeIn...),
		Queued:        c.queued,
		Limit:         shownLimit(c.cfg.Global),
		ScopeLimits:   make([]int, len(c.cfg.Scopes)),
	}
	for i, l := range c.cfg.Scopes {
		s.ScopeLimits[i] = shownLimit(l)
	}
	s.OldestWait = c.OldestWait(now)
	return s
}

// OldestWait is the age of the oldest waiter of any class (zero with
// nobody waiting).
func (c *Core) OldestWait(now time.Time) time.Duration {
	var d time.Duration
	for p := range Priority(numPriorities) {
		if h := c.head[p]; h != nil {
			d = max(d, now.Sub(h.enqueued))
		}
	}
	return d
}

// expiryHeap orders waiters by when their wait runs out.
type expiryHeap []*entry

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	if h[i].expires.Equal(h[j].expires) {
		return h[i].ticket < h[j].ticket
	}
	return h[i].expires.Before(h[j].expires)
}
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *expiryHeap) Push(x any) {
	e := x.(*entry)
	e.heapIdx = len(*h)
	*h = append(*h, e)
}
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapIdx = -1
	return e
}
