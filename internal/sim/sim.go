// Package sim is Sluice's deterministic discrete-event simulator. It runs
// a scenario (package scenario) through the same lifecycle.Engine the
// gateway uses, on a virtual clock, against upstreams whose behaviour
// comes from the same upstream.Planner that sluice mock uses. One seed owns
// every random draw, so a scenario and seed give byte-identical output.
//
// The simulator models three things around the engine: clients (open-loop
// arrivals, a priority mix, patience, retries), the gateway process (a
// memory budget that crashes it, as in seed 000) and upstreams (latency,
// brownouts, failures, a running/waiting capacity model). Everything the
// gateway decides, the engine decides here too; the arrival times, the
// classes and prompt sizes, the clients' retry decisions and the
// upstreams' capacity come from package workload, and the upstreams'
// latency and failures from package upstream: the models sluice load and
// sluice mock run on the wall clock.
//
// Clients may be several streams (scenario clients.streams): each with
// its own arrivals and draws, its key (its budget, its class, whether it
// may be degraded), its prompt sizes and max_tokens, which the engine
// reserves and settles, and the upstream reads (prefill) and caps the
// answer by. Refusals are answered as the gateway answers them: 429 for
// a key's budget, 413 for a request no budget could ever take, a shed
// otherwise.
package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/limit"
	"github.com/sluice-gw/sluice/internal/model/workload"
	"github.com/sluice-gw/sluice/internal/policy"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// Options tune a run without editing the scenario.
type Options struct {
	// RPSScale multiplies every arrival rate (default 1).
	RPSScale float64
	// SampleEvery is the time-series period (default 1s).
	SampleEvery time.Duration
}

// Result holds one table row and one time series per policy.
type Result struct {
	Rows   []*report.Row
	Series []*Series
	// Events are the scenario's scripted events, for plots.
	Events []Span
}

// Run simulates every policy of a scenario.
func Run(f *scenario.File, o Options) (*Result, error) {
	if o.RPSScale == 0 {
		o.RPSScale = 1
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = time.Second
	}
	res := &Result{Events: scriptedEvents(f)}
	for _, p := range f.Policies() {
		cfg, err := f.PolicyConfig(p)
		if err != nil {
			return nil, err
		}
		r, err := newRun(f, p, cfg, o)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		r.loop()
		for _, rp := range r.reps {
			r.row.Extra += r.extraCalls(rp) + rp.extraBefore
		}
		r.row.Extra -= r.elsewhere
		if r.fleet != nil {
			r.fleet.finish(r)
		}
		res.Rows = append(res.Rows, r.row)
		res.Series = append(res.Series, r.series)
	}
	return res, nil
}

// origin is virtual time zero: a fixed wall instant (any would do) that
// also carries a monotonic reading, so that every virtual instant made
// from it does too (Add keeps it). The engine subtracts and compares
// times millions of times an hour; between two times with monotonic
// readings the standard library takes the difference of two integers,
// and between two without, it takes the wall clock's seconds and
// nanoseconds apart and checks the result for overflow, several times
// the work. The reading's value comes from the real clock but no result
// depends on it: every virtual instant is origin plus a duration, so
// their differences, which are all the engine reads, are the durations'.
// (Its location is the machine's, as time.Now's is; nothing prints it.)
var origin = withMonotonic(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// withMonotonic is at with a monotonic reading.
func withMonotonic(at time.Time) time.Time {
	now := time.Now() // the only source of a monotonic reading
	return now.Add(at.Sub(now))
}

type reqState uint8

const (
	stIdle      reqState = iota // between attempts
	stInGateway                 // queued or in flight
	stDone                      // final outcome recorded (or abandoned)
)

// request is one unique client request across its attempts. Its fields
// are ordered to pack: the hour at 1,000 req/s allocates one per request
// (TestAllocationsPerRequest).
type request struct {
	uid uint64
	st  *flow // the traffic stream it belongs to
	// inTok is its prompt's tokens; maxOut the max_tokens this attempt
	// asks for (0: none), after degradation; outLimit, the output the
	// gateway relays of its answer (lifecycle.Engine.OutputLimit), where
	// it cuts an upstream that goes on past it.
	inTok, maxOut, outLimit int64
	// route is this attempt's route: its model's, or that of the model it
	// was degraded to. Its Targets are the providers in failover order,
	// its Continue what each can do to continue a broken stream.
	route *lifecycle.Route
	first time.Duration // first attempt: patience counts from here
	sent  time.Duration // this attempt
	id    lifecycle.ID
	calls [2]*upCall    // this attempt's first call and its hedge
	ttft  time.Duration // client-observed first byte, from first
	// rep is the replica this attempt was sent to.
	rep *replica
	// hold is this attempt's reservation of its key's shared budget
	// (fleet with a store), nil when it holds none.
	hold *sharedHold
	// committed is the call whose answer the client is getting; cont,
	// its continuation's state once its stream broke (continuation.go).
	committed *upCall
	cont      *contState
	token     uint32
	attempt   int32
	scope     int32 // the provider this attempt was routed to
	pri       admission.Priority
	state     reqState
	degraded  bool // this attempt is served degraded
	// started: this attempt's answer reached the client's first byte, so
	// the client will not retry it (workload.Retryable).
	started bool
}

type run struct {
	f      *scenario.File
	cfg    *config.Config
	sc     *scenario.Scenario
	o      Options
	row    *report.Row
	series *Series

	// reps are the gateway's replicas: one unless the scenario runs a
	// fleet, which fleet then describes (nil for one replica).
	reps   []*replica
	fleet  *fleet
	now    time.Duration
	events eventQueue
	seq    uint64
	rng    *rand.Rand
	ups    []*upstream
	// pools holds, per scope, a pooled provider's replicas' upstreams
	// (nil for a provider of one server, whose upstream is ups[s]; for a
	// pool, ups[s] is its first replica).
	pools [][]*upstream
	scope int // the main stream's model's first target's provider, for the series
	// flows are the traffic streams, the main one first.
	flows []*flow
	// arrival is the stream whose pending new request comes first (nil:
	// none pending); the streams hold these events, not the heap.
	arrival *flow
	nextUID uint64
	// elsewhere counts synthetic probes a replica answered itself
	// because another holds the probe lease: never sent.
	elsewhere int
	retry     workload.Retry
	// clients are the scenario's clients as this policy runs them.
	clients  scenario.Clients
	timeline *report.Timeline
	// patienceQ holds the clients' patience deadlines in due order from
	// patienceHead, one per request in uid order (patienceQ[i] is uid
	// patienceBase+i); a request that ends clears its own (final), so
	// the loop passes it without looking at the request.
	patienceQ    []patienceEntry
	patienceHead int
	patienceBase uint64
	routes       map[string]lifecycle.Route
	routeRefs    map[string]*lifecycle.Route // the same, for requests to point at
	// spareCalls are calls done with, for reuse (recycleCall), and
	// spareReqs requests (recycleRequest).
	spareCalls []*upCall
	spareReqs  []*request
	// evals runs the models' fallback evals, nil without any; gradeRng
	// draws whether an answer is right (evals.go).
	evals    *simEvals
	gradeRng *rand.Rand
}

// replica is one gateway process: its engine (admission, limits,
// breakers, budgets), what it holds, and its crashes.
type replica struct {
	idx    int
	eng    *lifecycle.Engine
	byID   heldTable     // its requests, by engine ticket
	tickAt time.Duration // pending engine tick, -1 if none
	// probes are the synthetic probes in flight.
	probes []*upCall
	down   time.Duration // refusing arrivals until then
	// crashes counts this replica's restarts; extraBefore carries second
	// calls counted by its engines lost to crashes.
	crashes     int
	extraBefore int
	fl          replicaFleet
	// limits are its scopes' limit algorithms, kept across a crash
	// under seed 000's tick rules (scenario tick_rules: seed).
	limits []limit.Algorithm
}

func newRun(f *scenario.File, p scenario.Policy, cfg *config.Config, o Options) (*run, error) {
	name := p.Name
	sc := &f.Scenario
	clients := sc.Clients.For(p)
	r := &run{
		f: f, cfg: cfg, sc: sc, o: o,
		row: &report.Row{Name: name, Duration: sc.Duration},
		rng: rand.New(rand.NewPCG(sc.Seed, sc.Seed^0x51ce)),
		// Patience bounds retries whether or not clients abandon.
		retry:   clients.Retry.Policy(sc.Clients.Patience, 1),
		clients: clients,
	}
	r.series = newSeries(name)
	r.timeline = &report.Timeline{}
	r.row.Timeline = r.timeline
	for _, p := range cfg.Providers {
		// A native provider answers in the hub's terms: Anthropic's statuses.
		anthropic := p.Kind == config.KindAnthropic || p.Native()
		if !p.Pooled() {
			u := newUpstream(f.Upstream(p.Name), anthropic)
			r.ups = append(r.ups, u)
			r.pools = append(r.pools, nil)
			r.row.Graded = r.row.Graded || u.quality < 1
			continue
		}
		// A pool: one modelled server per replica, each playing the
		// scenario's upstream of the replica's name.
		var reps []*upstream
		for _, rc := range p.Replicas {
			u := newUpstream(f.Upstream(rc.Name), anthropic)
			reps = append(reps, u)
			r.row.Graded = r.row.Graded || u.quality < 1
		}
		r.ups = append(r.ups, reps[0])
		r.pools = append(r.pools, reps)
	}
	r.row.Graded = r.row.Graded || cfg.HasEvals()
	r.gradeRng = rand.New(rand.NewPCG(sc.Seed, sc.Seed^0x9ade))
	if err := r.startEvals(); err != nil {
		return nil, err
	}
	if n := sc.Fleet.Slots(); n > 1 {
		r.fleet = newFleet(sc, cfg, n)
	}
	for i := range sc.Fleet.Slots() {
		rp := &replica{idx: i}
		r.reps = append(r.reps, rp)
		if err := r.restartEngine(rp); err != nil {
			return nil, err
		}
	}
	if r.fleet != nil {
		r.fleet.start(r)
	}
	if err := r.newFlows(); err != nil {
		return nil, err
	}
	r.scope = r.flows[0].route.Targets[0]
	// Room for the latencies of the requests the schedule will send, so
	// an hour's millions of samples are not copied as they grow.
	var expect [3]float64
	for _, fl := range r.flows {
		sh := fl.shares
		total := sh[0] + sh[1] + sh[2]
		for p, s := range sh {
			if total > 0 {
				expect[p] += fl.sched.Integral(0, sc.Duration) * s / total
			}
		}
	}
	for p, e := range expect {
		if e > 0 {
			n := int(e*1.05) + 16
			r.row.Latency[p], r.row.TTFT[p] = make(report.Samples, 0, n), make(report.Samples, 0, n)
		}
	}
	if sc.Tick > 0 {
		r.push(0, classArrival, evArrivals, nil)
	} else {
		for _, fl := range r.flows {
			if t, ok := fl.arr.Next(); ok {
				r.pushArrival(t, fl)
			}
		}
	}
	r.push(0, classSample, evSample, nil)
	r.startScrapes()
	return r, nil
}

// restartEngine builds a fresh engine for a replica, as a restarted
// process would. Each replica's engine is built from the config on its
// own, so no breaker, limiter or budget is shared by accident.
func (r *run) restartEngine(rp *replica) error {
	ec, err := policy.FromConfig(r.cfg)
	if err != nil {
		return err
	}
	// The scenario's seed owns the engine's draws too; a restarted engine
	// draws afresh, as a restarted process would, and each replica draws
	// its own (the first one as a lone gateway does).
	ec.Seed = r.sc.Seed ^ uint64(rp.crashes)<<32 ^ uint64(rp.idx)*0x9e3779b97f4a7c15
	// A Retry-After no client reads is not worth its estimate.
	ec.Admission.Unhinted = !r.retry.ReadsRetryAfter()
	if r.sc.SeedRules() {
		// Seed 000's policies outlive its crashes: the restarted process
		// goes on with the limit the old one had reached.
		if rp.limits != nil {
			for i := range ec.Scopes {
				if ec.Scopes[i].Limit != nil && rp.limits[i] != nil {
					ec.Scopes[i].Limit = rp.limits[i]
				}
			}
		}
		rp.limits = make([]limit.Algorithm, len(ec.Scopes))
		for i, sc := range ec.Scopes {
			rp.limits[i] = sc.Limit
		}
	}
	if r.fleet != nil {
		r.fleet.configure(r, rp, &ec)
	}
	rp.eng = lifecycle.New(ec)
	if r.fleet != nil && r.fleet.shared {
		rp.eng.ShareEvidence()
	}
	r.routes = ec.Routes
	r.routeRefs = make(map[string]*lifecycle.Route, len(ec.Routes))
	for name, rt := range ec.Routes {
		r.routeRefs[name] = &rt
	}
	r.reapplyEvals(rp)
	rp.byID.reset()
	rp.tickAt = -1
	return nil
}

func (r *run) clock(t time.Duration) time.Time { return origin.Add(t) }

// originUnix is origin in Unix seconds.
var originUnix = origin.Unix()

// sinceOrigin is t.Sub(origin), virtual time from the engine's time,
// without Sub's check for overflow where none can happen.
func sinceOrigin(t time.Time) time.Duration {
	if s := t.Unix() - originUnix; s > -maxSeconds && s < maxSeconds {
		return time.Duration(s)*time.Second + time.Duration(t.Nanosecond())
	}
	return t.Sub(origin)
}

// maxSeconds bounds the seconds sinceOrigin converts itself: a
// time.Duration holds about 292 years.
const maxSeconds = 1 << 33

// quantise rounds t up to the next tick in tick mode: events happen at
// ticks, as in seed 000's simulation. A call's end is quantised, but
// its latency is not (upCall.endsAt): the seed judges ok or late, fast
// or slow, by the call's own end.
func (r *run) quantise(t time.Duration) time.Duration {
	if k := r.sc.Tick; k > 0 && t%k != 0 {
		return (t/k + 1) * k
	}
	return t
}

// pushCall schedules an upstream event of one call.
func (r *run) pushCall(at time.Duration, kind eventKind, c *upCall) {
	r.seq++
	if kind == evDone {
		c.endsAt = at
	}
	at = r.quantise(at)
	switch kind {
	case evDone:
		c.doneAt = at
	case evFirstByte:
		c.firstAt = at
	}
	r.events.push(event{at: at, order: order(classUpstream, r.seq), kind: kind, call: c, token: c.gen})
}

func (r *run) push(at time.Duration, class uint8, kind eventKind, q *request) {
	r.seq++
	e := event{at: r.quantise(at), order: order(class, r.seq), kind: kind, req: q}
	if q != nil {
		e.token = q.token
	}
	r.events.push(e)
}

// loop runs events until the scenario's end.
func (r *run) loop() {
	for {
		e, ok := r.nextEvent()
		if !ok || (e.at >= r.sc.Duration && !r.sc.Drain) {
			break
		}
		if e.at >= r.sc.Duration && e.kind == evSample {
			continue // draining: no more periods to report
		}
		r.now = e.at
		if e.kind == evPatience && e.req == nil {
			continue // the request ended before its client's patience did
		}
		if e.req != nil && e.kind != evPatience && e.token != e.req.token {
			continue // stale: the request moved on (patience never is: see pushClient)
		}
		if e.call != nil && (e.call.done || e.call.gen != e.token) {
			continue // stale: the call was answered or cancelled (and perhaps reused)
		}
		switch e.kind {
		case evEngineTick:
			rp := r.reps[e.rep]
			if e.at == rp.tickAt {
				rp.tickAt = -1
			}
			r.apply(rp, rp.eng.Tick(r.clock(r.now)))
		case evAdopt:
			r.fleet.adopt(r, e)
		case evShare:
			r.fleet.share(r)
		case evEvidence:
			r.fleet.count(r, e)
		case evRefill:
			r.fleet.refilled(r, e)
		case evSweep:
			r.fleet.sweep(r)
		case evBeat:
			r.fleet.beat(r, e)
		case evMember:
			r.fleet.member(r, e)
		case evFirstByte:
			r.firstByte(e.call)
		case evDone:
			if q := e.call.q; q != nil && r.sc.SeedRules() && q.state == stInGateway {
				// Seed 000 settles a tick's calls one by one in arrival
				// order: the slow flags and deadlines of calls admitted
				// before this one come first.
				r.apply(q.rep, q.rep.eng.TickAhead(r.clock(r.now), q.id))
				if e.call.done {
					continue
				}
			}
			r.upstreamDone(e.call)
		case evLaunch:
			r.launch(e.call)
		case evProbeLimit:
			r.probeDone(e.call, lifecycle.Outcome{Kind: lifecycle.TimedOut})
		case evPatience:
			r.patience(e.req)
		case evAttemptTimeout:
			r.attemptTimeout(e.req)
		case evEval:
			r.evalTick()
		case evArrive:
			q := e.req
			if q == nil {
				fl := r.flows[e.flow]
				q = r.newRequest(fl)
				if t, ok := fl.arr.Next(); ok {
					r.pushArrival(t, fl)
				}
			}
			r.arrive(q)
			if q.rep != nil { // nil: the client shed it itself
				r.checkMemory(q.rep)
			}
		case evArrivals:
			for _, fl := range r.flows {
				n := 0
				if r.sc.SeedRules() {
					n = fl.arr.PerTickSeed(r.now, r.sc.Tick)
				} else {
					n = fl.arr.PerTick(r.now, r.sc.Tick)
				}
				for range n {
					r.arrive(r.newRequest(fl))
				}
			}
			for _, rp := range r.reps {
				r.checkMemory(rp)
			}
			if next := r.now + r.sc.Tick; next < r.sc.Duration {
				r.push(next, classArrival, evArrivals, nil)
			}
		case evScrape:
			r.scrape()
		case evSample:
			r.sample()
			r.push(r.now+r.o.SampleEvery, classSample, evSample, nil)
		}
		for _, rp := range r.reps {
			r.armEngine(rp)
		}
		r.armEvals()
		if r.fleet != nil && r.fleet.track {
			r.fleet.measure(r)
		}
	}
}

// armEngine schedules a Tick for a replica's engine's next timer.
func (r *run) armEngine(rp *replica) {
	next, ok := rp.eng.NextTimer()
	if !ok {
		return
	}
	at := r.quantise(sinceOrigin(next))
	if at < r.now {
		at = r.now
	}
	if rp.tickAt >= 0 && rp.tickAt <= at {
		return
	}
	rp.tickAt = at
	r.seq++
	r.events.push(event{at: at, order: order(classEngine, r.seq), kind: evEngineTick, rep: uint16(rp.idx)})
}

func (r *run) newRequest(fl *flow) *request {
	r.nextUID++
	var q *request
	if n := len(r.spareReqs); n > 0 {
		q = r.spareReqs[n-1]
		r.spareReqs[n-1] = nil
		r.spareReqs = r.spareReqs[:n-1]
		*q = request{token: q.token + 1} // its old events stay stale
	} else {
		q = new(request)
	}
	q.uid, q.st, q.first, q.pri, q.inTok = r.nextUID, fl, r.now, fl.priority(), fl.promptTokens()
	r.row.Unique++
	if p := r.sc.Clients.Patience; p > 0 && r.sc.Clients.AbandonOnPatience() {
		r.pushClient(q, r.now+p)
	}
	return q
}

// pushClient schedules a client's patience running out. Every request has
// the same patience and arrives in time order, so these events come due
// in the order they are pushed: a FIFO holds them instead of the heap,
// where they would mostly sit stale. They survive token changes, so they
// carry no token check of their own.
func (r *run) pushClient(q *request, at time.Duration) {
	r.seq++
	if len(r.patienceQ) == 0 {
		r.patienceBase, r.patienceHead = q.uid, 0
	}
	r.patienceQ = append(r.patienceQ, patienceEntry{at: r.quantise(at), order: order(classClient, r.seq), q: q})
}

// patienceEntry is one client's patience deadline: an evPatience event,
// q nil once the request has ended (dropPatience).
type patienceEntry struct {
	at    time.Duration
	order uint64
	q     *request
}

// dropPatience clears the patience deadline of q, which has ended: its
// event would find nothing to do.
func (r *run) dropPatience(q *request) {
	if i := q.uid - r.patienceBase; q.uid >= r.patienceBase && i < uint64(len(r.patienceQ)) && int(i) >= r.patienceHead {
		if p := &r.patienceQ[i]; p.q == q {
			p.q = nil
		}
	}
}

// nextEvent pops the earliest event of the queue, the patience FIFO and
// the streams' pending arrivals.
func (r *run) nextEvent() (event, bool) {
	top := r.events.top()
	if a := r.arrival; a != nil && (top == nil || a.next.before(top)) &&
		(len(r.patienceQ) == r.patienceHead || r.patienceQ[r.patienceHead].after(&a.next)) {
		return r.popArrival(), true
	}
	fifo := len(r.patienceQ) > r.patienceHead
	switch {
	case fifo && (top == nil || r.patienceFirst(top)):
		p := r.patienceQ[r.patienceHead]
		r.patienceQ[r.patienceHead] = patienceEntry{}
		r.patienceHead++
		if r.patienceHead > 4096 && r.patienceHead*2 > len(r.patienceQ) {
			r.patienceQ = append(r.patienceQ[:0], r.patienceQ[r.patienceHead:]...)
			r.patienceBase += uint64(r.patienceHead)
			r.patienceHead = 0
		}
		return event{at: p.at, order: p.order, kind: evPatience, req: p.q}, true
	case top != nil:
		return r.events.pop(), true
	}
	return event{}, false
}

func (r *run) patienceFirst(top *event) bool {
	return !r.patienceQ[r.patienceHead].after(top)
}

// after reports whether p comes after e.
func (p *patienceEntry) after(e *event) bool {
	return p.at > e.at || (p.at == e.at && p.order > e.order)
}

// arrive sends one attempt into the gateway.
func (r *run) arrive(q *request) {
	if q.attempt == 0 {
		if g := q.st.gov; g != nil && !g.Admit(r.clock(r.now), q.st.rng.Float64()) {
			// Shed by the client itself: nothing is sent.
			r.timeline.Throttle(r.now, int(q.pri))
			r.final(q, report.Shed)
			return
		}
		r.timeline.Arrive(r.now)
	} else {
		r.timeline.Retry(r.now)
		r.series.cur.Retries++
	}
	if t := r.sc.Clients.Timeout; t > 0 {
		r.push(r.now+t, classClient, evAttemptTimeout, q)
	}
	q.attempt++
	q.sent = r.now
	q.calls = [2]*upCall{} // a new attempt starts with no calls
	q.started = false
	r.row.Attempts++
	rp := r.reps[0]
	if r.fleet != nil {
		rp = r.fleet.pick(r)
	}
	q.rep = rp
	if r.now < rp.down {
		r.fail(q, report.Lost, 0)
		return
	}
	var deadline time.Duration // what the client says it has left
	if r.clients.SendsDeadline() {
		deadline = max(r.clients.AttemptDeadline(r.now-q.first), time.Millisecond)
	}
	req := r.request(q, deadline)
	q.outLimit = rp.eng.OutputLimit(req)
	if r.fleet != nil && !r.fleet.take(r, q, req) {
		return // refused by the key's shared budget
	}
	a, rd := rp.eng.Arrive(r.clock(r.now), req)
	if a.Verdict == admission.Rejected {
		r.fleet.settle(r, q)
		r.refused(q, a)
	} else {
		q.state, q.id, q.scope = stInGateway, a.ID, int32(q.route.Targets[a.Target])
		rp.byID.put(a.ID, q)
		if a.Verdict == admission.Admitted {
			r.startUpstream(q)
		}
	}
	r.apply(rp, rd)
}

// apply carries out a replica's engine Ready.
func (r *run) apply(rp *replica, rd lifecycle.Ready) {
	for _, t := range rd.Transitions {
		if t.To == breaker.Open {
			r.row.Trips++
		}
		if rp.idx == 0 && t.Scope >= 0 && t.Scope < len(r.cfg.Providers) {
			r.series.Marks = append(r.series.Marks, Mark{At: r.now, Provider: r.cfg.Providers[t.Scope].Name, To: t.To.String(), Step: t.Step})
		}
		if r.fleet != nil {
			r.fleet.transition(r, rp, t)
		}
	}
	for _, id := range rd.Start {
		if q := rp.byID.get(id); q != nil {
			if t, ok := rp.eng.Target(id); ok {
				q.scope = int32(q.route.Targets[t]) // it may have been moved while it waited
			}
			r.startUpstream(q)
		}
	}
	for _, f := range rd.Refuse {
		if q := rp.byID.get(f.Ticket); q != nil {
			r.leaveGateway(q)
			r.reply(q, lifecycle.Answer(lifecycle.Refused(f)))
		}
	}
	for _, f := range rd.Abandon {
		// Answered early: its provider cannot meet its deadline.
		if q := rp.byID.get(f.Ticket); q != nil {
			next := r.cancelCalls(q, lifecycleCancelled, true)
			r.leaveGateway(q)
			r.reply(q, lifecycle.Answer(lifecycle.Refused(f)))
			r.apply(rp, next)
		}
	}
	for _, id := range rd.Expire {
		if q := rp.byID.get(id); q != nil {
			if r.answersNow(q) {
				// A tie goes to the answer: a tick settles what is done
				// before what is due, and so does a call whose answer
				// and deadline land on one instant.
				continue
			}
			next := r.cancelCalls(q, lifecycle.Outcome{Kind: lifecycle.TimedOut}, true)
			r.leaveGateway(q)
			r.final(q, report.TimedOut)
			r.apply(rp, next)
		}
	}
	for _, h := range rd.Second {
		if q := rp.byID.get(h.ID); q != nil {
			r.startCall(q, 1, q.route.Targets[h.Target])
		} else {
			// The request has left (the engine does not hedge one it
			// expires, so this is a safety net): end the call unsent.
			next, _ := rp.eng.FinishSecond(r.clock(r.now), h.ID, lifecycleCancelled)
			r.apply(rp, next)
		}
	}
	for _, p := range rd.Probe {
		r.startProbe(rp, p)
	}
}

// answersNow reports whether one of q's calls answers at this instant.
func (r *run) answersNow(q *request) bool {
	for _, c := range q.calls {
		if c != nil && c.running && c.endKind == lifecycle.EndAnswered && (c.doneAt == r.now || c.firstAt == r.now) {
			return true
		}
	}
	return false
}

func (r *run) leaveGateway(q *request) {
	q.rep.byID.delete(q.id)
	if q.hold != nil {
		r.fleet.settle(r, q)
	}
	q.state = stIdle
	q.token++
}

// checkMemory crashes a replica's process when what it holds exceeds
// its budget.
func (r *run) checkMemory(rp *replica) {
	held := rp.byID.len()
	r.row.Peak = max(r.row.Peak, held)
	p := r.sc.Process
	if p == nil || float64(held)*p.MBPerRequest <= p.MemoryMB {
		return
	}
	r.row.Crashes++
	rp.crashes++
	lost := rp.byID.all(make([]*request, 0, held))
	sortByUID(lost)
	for _, q := range lost {
		r.cancelCalls(q, lifecycleCancelled, false)
		q.state = stIdle
		q.token++
		q.hold = nil // the store keeps what a dead replica reserved
		r.fail(q, report.Lost, 0)
	}
	for _, c := range rp.probes {
		r.cancelCall(c) // the engine that sent it is gone
	}
	rp.probes = nil
	rp.extraBefore += r.extraCalls(rp)
	r.restartEngine(rp)
	rp.down = r.now + p.Restart
	if r.fleet != nil {
		r.fleet.restarted(r, rp)
	}
}

// extraCalls counts a replica's current engine's second calls (hedges,
// retries and rescues) and synthetic probes: the calls beyond one per
// attempt.
func (r *run) extraCalls(rp *replica) int {
	st := rp.eng.SecondStats()
	return int(st.Fired+st.FirstToken+st.Retries+st.Rescued) + int(rp.eng.ProbesSent())
}
