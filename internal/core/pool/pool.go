package pool

import (
	"math"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// Balance is how a pool spreads calls over its replicas.
type Balance uint8

const (
	// LeastLoaded sends each call to the usable replica with the lowest
	// cost (see the package comment). The default.
	LeastLoaded Balance = iota
	// RoundRobin sends calls to the usable replicas in turn.
	RoundRobin
)

// ParseBalance maps a config name to its Balance; "" is LeastLoaded.
func ParseBalance(s string) (Balance, bool) {
	switch s {
	case "", "least_loaded":
		return LeastLoaded, true
	case "round_robin":
		return RoundRobin, true
	}
	return 0, false
}

func (b Balance) String() string {
	if b == RoundRobin {
		return "round_robin"
	}
	return "least_loaded"
}

// DefaultDecay is the time constant of the latency average before time
// scaling: a replica's slow answers weigh on its cost for about this
// long once it stops giving them.
const DefaultDecay = 10 * time.Second

// Replica configures one replica.
type Replica struct {
	// Limit caps this gateway's calls in flight on the replica; 0 means
	// unlimited (and then so is the pool).
	Limit int
	// Metrics: the replica has a metrics endpoint the host scrapes and
	// hands to Observe. Without one it is never drained for staleness
	// or for its queue.
	Metrics bool
	// Breaker, when set, takes the replica out while it is unhealthy.
	// Its probes are the pool's own calls (traffic probes).
	Breaker *breaker.Breaker
}

// Config configures a Pool.
type Config struct {
	Balance  Balance
	Replicas []Replica
	// MaxWaiting drains a replica whose metrics show more requests
	// waiting than this. Zero derives it from the replica itself: more
	// waiting than running, a queue longer than one whole batch.
	MaxWaiting int
	// StaleAfter drains a replica with metrics whose last successful
	// scrape is older than this (0: never).
	StaleAfter time.Duration
	// Decay is the latency average's time constant (0: DefaultDecay).
	Decay time.Duration
}

// Load is what one scrape of a replica's metrics says.
type Load struct {
	// Waiting and Running are requests queued and generating, from every
	// client of the replica.
	Waiting, Running float64
	// KVCache is the share of its KV cache in use, 0 to 1.
	KVCache float64
}

// Pick is a replica chosen for one call. Report its end with Done.
type Pick struct {
	Replica int
	// Ticket is the replica breaker's, when HasTicket.
	Ticket    breaker.Ticket
	HasTicket bool
}

// Why a replica is not taking new calls.
type Drain uint8

const (
	NotDrained Drain = iota
	// Stale: its metrics have not answered for StaleAfter.
	Stale
	// Queued: its waiting queue is past the cap.
	Queued
	// Tripped: its breaker is open.
	Tripped
)

func (d Drain) String() string {
	switch d {
	case Stale:
		return "stale"
	case Queued:
		return "queued"
	case Tripped:
		return "tripped"
	}
	return ""
}

type replica struct {
	cfg      Replica
	inFlight int
	// The last successful scrape, when, and this gateway's calls in
	// flight there as it arrived (already in its counts).
	load     Load
	loadAt   time.Time
	ownAtObs int
	observed bool
	// lat is the peak-sensitive latency average in seconds as of latAt.
	lat   float64
	latAt time.Time
}

// Pool is one pool's replica state and picker. See the package comment.
type Pool struct {
	cfg  Config
	reps []*replica
	// born is the first instant the pool saw: a replica with metrics
	// that has never answered is stale StaleAfter from then.
	born time.Time
	// now is the latest instant any method was given, for Limit, which
	// admission reads without one.
	now  time.Time
	next int // the replica after the last one picked
}

// New builds a pool.
//
// REQUIRES: at least one replica.
func New(cfg Config) *Pool {
	if cfg.Decay <= 0 {
		cfg.Decay = DefaultDecay
	}
	p := &Pool{cfg: cfg}
	for _, r := range cfg.Replicas {
		p.reps = append(p.reps, &replica{cfg: r})
	}
	return p
}

// Len is the number of replicas.
func (p *Pool) Len() int { return len(p.reps) }

// Balance is the pool's balance.
func (p *Pool) Balance() Balance { return p.cfg.Balance }

func (p *Pool) advance(now time.Time) {
	if p.born.IsZero() {
		p.born = now
	}
	if now.After(p.now) {
		p.now = now
	}
}

// Observe records a successful scrape of replica i's metrics.
func (p *Pool) Observe(now time.Time, i int, l Load) {
	p.advance(now)
	if i < 0 || i >= len(p.reps) {
		return
	}
	r := p.reps[i]
	r.load, r.loadAt, r.ownAtObs, r.observed = l, now, r.inFlight, true
}

// fresh reports whether replica r's metrics are recent enough to use.
func (p *Pool) fresh(now time.Time, r *replica) bool {
	return r.observed && (p.cfg.StaleAfter <= 0 || now.Sub(r.loadAt) <= p.cfg.StaleAfter)
}

// drain says why replica r takes no new calls at now, if it does not.
func (p *Pool) drain(now time.Time, r *replica) Drain {
	if b := r.cfg.Breaker; b != nil {
		if st, _ := b.State(now); st == breaker.Open {
			return Tripped
		}
	}
	if !r.cfg.Metrics {
		return NotDrained
	}
	if p.cfg.StaleAfter > 0 {
		last := p.born
		if r.observed {
			last = r.loadAt
		}
		if now.Sub(last) > p.cfg.StaleAfter {
			return Stale
		}
	}
	if p.fresh(now, r) && r.load.Waiting > p.waitCap(r) {
		return Queued
	}
	return NotDrained
}

// waitCap is the queue past which r is drained.
func (p *Pool) waitCap(r *replica) float64 {
	if p.cfg.MaxWaiting > 0 {
		return float64(p.cfg.MaxWaiting)
	}
	return max(1, r.load.Running)
}

// usable: the replica may take a call (drained for its queue or not).
func usable(d Drain) bool { return d == NotDrained || d == Queued }

// Available reports whether any replica may take a call now: if not,
// the pool is out of rotation, as a provider with an open breaker is.
func (p *Pool) Available(now time.Time) bool {
	p.advance(now)
	for _, r := range p.reps {
		if usable(p.drain(now, r)) && p.allowsNow(now, r) {
			return true
		}
	}
	return false
}

// allowsNow: r's breaker would take a call (closed, recovering, or
// half-open with a probe to give); it takes no ticket.
func (p *Pool) allowsNow(now time.Time, r *replica) bool {
	b := r.cfg.Breaker
	if b == nil || b.Weight(now) > 0 {
		return true
	}
	st, _ := b.State(now)
	return st == breaker.HalfOpen
}

// Limit is the pool's concurrency limit at the latest instant it saw:
// the sum of the limits of its replicas taking calls (those under their
// queue cap, or, when every usable one is past it, all usable ones), 0
// (unlimited) if any of them has no limit, and 1 when none takes calls,
// so a waiter is not started on a pool that has nowhere to send it.
// Before the pool has seen an instant, no replica is judged: every one
// counts (no breaker is asked about a time that never was).
func (p *Pool) Limit() int {
	sum, sumCapped := 0, 0
	open, openCapped := false, false
	any, anyCapped := false, false
	for _, r := range p.reps {
		d := NotDrained
		if !p.now.IsZero() {
			d = p.drain(p.now, r)
		}
		switch d {
		case NotDrained:
			any = true
			sum += r.cfg.Limit
			open = open || r.cfg.Limit <= 0
		case Queued:
			anyCapped = true
			sumCapped += r.cfg.Limit
			openCapped = openCapped || r.cfg.Limit <= 0
		}
	}
	switch {
	case any && open, !any && anyCapped && openCapped:
		return 0
	case any:
		return sum
	case anyCapped:
		return sumCapped
	}
	return 1
}

// latency is r's latency average decayed to now, in seconds, and
// whether it has one.
func (p *Pool) latency(now time.Time, r *replica) (float64, bool) {
	if r.latAt.IsZero() {
		return 0, false
	}
	dt := now.Sub(r.latAt).Seconds()
	return r.lat * math.Exp(-dt/p.cfg.Decay.Seconds()), true
}

// load is r's estimated requests in progress: this gateway's calls
// there now, plus what its last fresh scrape showed beyond this
// gateway's calls at the time.
func (p *Pool) load(now time.Time, r *replica) float64 {
	l := float64(r.inFlight)
	if p.fresh(now, r) {
		l += max(0, r.load.Waiting+r.load.Running-float64(r.ownAtObs))
	}
	return l
}

// cost scores r for least-loaded; floor is the latency given to a
// replica with no latency yet (the best known, so it is tried).
func (p *Pool) cost(now time.Time, r *replica, floor float64) float64 {
	lat, ok := p.latency(now, r)
	if !ok {
		lat = floor
	}
	c := (p.load(now, r) + 1) * max(lat, 1e-6)
	if p.fresh(now, r) {
		c *= 1 + min(max(r.load.KVCache, 0), 1)
	}
	if b := r.cfg.Breaker; b != nil {
		if w := b.Weight(now); w > 0 && w < 1 {
			c /= w
		}
	}
	return c
}

// Pick chooses the replica for a call starting now, counts the call in
// flight there and takes its breaker's ticket. It always returns a
// replica: when none is usable, the least loaded of all, without a
// ticket (the engine routes no request to a pool that is not Available,
// but a request that was waiting when the last replica went out still
// has to go somewhere).
func (p *Pool) Pick(now time.Time) Pick { return p.pick(now, -1) }

// PickOther is Pick for a request's second call (a retry or a hedge)
// whose first went to replica first: every other replica Pick would
// take comes before it. The replica that just failed, or has not
// answered, is the one least likely to do better; and one that fails
// fast (dead, refusing connections) looks the least loaded of all, so
// least-loaded alone would send the retry straight back to it.
func (p *Pool) PickOther(now time.Time, first int) Pick { return p.pick(now, first) }

// pick is Pick with replica avoid (-1: none) moved to the end of the
// order of preference.
func (p *Pool) pick(now time.Time, avoid int) Pick {
	p.advance(now)
	n := len(p.reps)
	drains := make([]Drain, n)
	for i, r := range p.reps {
		drains[i] = p.drain(now, r)
	}
	// order lists replicas by preference; the first whose breaker grants
	// a ticket wins.
	var order []int
	if p.cfg.Balance == RoundRobin {
		for k := range n {
			if i := (p.next + k) % n; usable(drains[i]) {
				order = append(order, i)
			}
		}
	} else {
		order = p.ranked(now, drains)
	}
	if k := slices.Index(order, avoid); k >= 0 {
		order = append(slices.Delete(order, k, k+1), avoid)
	}
	for _, i := range order {
		r := p.reps[i]
		if b := r.cfg.Breaker; b != nil {
			t, err := b.Allow(now)
			if err != nil {
				continue
			}
			return p.take(i, Pick{Replica: i, Ticket: t, HasTicket: true})
		}
		return p.take(i, Pick{Replica: i})
	}
	// Nothing usable: the least loaded of all.
	best := -1
	for k := range n {
		i := (p.next + k) % n
		if best < 0 || p.reps[i].inFlight < p.reps[best].inFlight {
			best = i
		}
	}
	return p.take(best, Pick{Replica: best})
}

func (p *Pool) take(i int, pk Pick) Pick {
	p.reps[i].inFlight++
	p.next = (i + 1) % len(p.reps)
	return pk
}

// ranked orders the usable replicas for least-loaded: those preferred
// (under their queue cap and their limit) first, then the rest usable;
// each group by cost, ties from the replica after the last picked.
func (p *Pool) ranked(now time.Time, drains []Drain) []int {
	n := len(p.reps)
	floor := math.Inf(1)
	for _, r := range p.reps {
		if l, ok := p.latency(now, r); ok && l < floor {
			floor = l
		}
	}
	if math.IsInf(floor, 1) {
		floor = 1 // no latency known anywhere: load alone decides
	}
	type scored struct {
		i    int
		tier int
		cost float64
	}
	var s []scored
	for k := range n {
		i := (p.next + k) % n
		if !usable(drains[i]) {
			continue
		}
		r := p.reps[i]
		tier := 0
		if drains[i] == Queued || (r.cfg.Limit > 0 && r.inFlight >= r.cfg.Limit) {
			tier = 1
		}
		s = append(s, scored{i, tier, p.cost(now, r, floor)})
	}
	// Insertion sort: stable, so equal costs keep the rotation order,
	// and pools are small.
	for a := 1; a < len(s); a++ {
		for b := a; b > 0; b-- {
			x, y := s[b-1], s[b]
			if x.tier < y.tier || (x.tier == y.tier && x.cost <= y.cost) {
				break
			}
			s[b-1], s[b] = y, x
		}
	}
	out := make([]int, len(s))
	for k, v := range s {
		out[k] = v.i
	}
	return out
}

// Done reports the end of a call Pick placed: it leaves the replica's
// in-flight count, its breaker hears o, and, when ok, latency (its
// first-token time for a stream, its whole time otherwise) joins the
// replica's latency average.
func (p *Pool) Done(now time.Time, pk Pick, o breaker.Outcome, latency time.Duration, ok bool) {
	p.advance(now)
	if pk.Replica < 0 || pk.Replica >= len(p.reps) {
		return
	}
	r := p.reps[pk.Replica]
	if r.inFlight > 0 {
		r.inFlight--
	}
	if pk.HasTicket && r.cfg.Breaker != nil {
		r.cfg.Breaker.Done(now, pk.Ticket, o)
	}
	if ok && latency > 0 {
		p.observeLatency(now, r, latency.Seconds())
	}
}

// observeLatency folds x into r's average: a higher value is taken at
// once (a replica turning slow is avoided from its first slow answer),
// a lower one is blended in by how long since the last.
func (p *Pool) observeLatency(now time.Time, r *replica, x float64) {
	cur, ok := p.latency(now, r)
	switch {
	case !ok, x >= cur:
		r.lat = x
	default:
		w := math.Exp(-now.Sub(r.latAt).Seconds() / p.cfg.Decay.Seconds())
		// Blend toward x with the sample's weight growing with the gap;
		// back-to-back samples each move it by at least a tenth.
		w = min(w, 0.9)
		r.lat = cur*w + x*(1-w)
	}
	r.latAt = now
}

// Tick advances the replicas' breakers.
func (p *Pool) Tick(now time.Time) {
	p.advance(now)
	for _, r := range p.reps {
		if r.cfg.Breaker != nil {
			r.cfg.Breaker.Tick(now)
		}
	}
}

// NextTimer is the earliest of the replicas' breakers' timers and the
// instants their metrics go stale, after the latest instant the pool
// saw: the pool's limit shrinks then, and the host should Tick.
func (p *Pool) NextTimer() (time.Time, bool) {
	var next time.Time
	consider := func(at time.Time) {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	for _, r := range p.reps {
		if b := r.cfg.Breaker; b != nil {
			if at, ok := b.NextTimer(); ok {
				consider(at)
			}
		}
		if r.cfg.Metrics && p.cfg.StaleAfter > 0 && !p.born.IsZero() {
			last := p.born
			if r.observed {
				last = r.loadAt
			}
			if at := last.Add(p.cfg.StaleAfter + time.Nanosecond); at.After(p.now) {
				consider(at)
			}
		}
	}
	return next, !next.IsZero()
}

// Transitions drains the replicas' breaker transitions, by replica.
func (p *Pool) Transitions() map[int][]breaker.Transition {
	var out map[int][]breaker.Transition
	for i, r := range p.reps {
		if r.cfg.Breaker == nil {
			continue
		}
		if ts := r.cfg.Breaker.Transitions(); len(ts) > 0 {
			if out == nil {
				out = map[int][]breaker.Transition{}
			}
			out[i] = ts
		}
	}
	return out
}

// Stat is one replica's state, for metrics and the admin API.
type Stat struct {
	InFlight int
	// Load is its last scrape and Fresh whether it is recent enough to
	// be used.
	Load  Load
	Fresh bool
	Drain Drain
	// Latency is its latency average now (0: none yet).
	Latency time.Duration
}

// Stats reports every replica's state at now.
func (p *Pool) Stats(now time.Time) []Stat {
	p.advance(now)
	out := make([]Stat, len(p.reps))
	for i, r := range p.reps {
		lat, _ := p.latency(now, r)
		out[i] = Stat{InFlight: r.inFlight, Load: r.load, Fresh: p.fresh(now, r), Drain: p.drain(now, r),
			Latency: time.Duration(lat * float64(time.Second))}
	}
	return out
}
