package lifecycle

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/limit"
	"github.com/sluice-gw/sluice/internal/core/pool"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/core/tickets"
)

// ID names a request from Arrive until Finish or refusal. It is the
// request's admission ticket.
type ID = admission.Ticket

// Signal is the latency an adaptive limit reads.
type Signal uint8

const (
	// Auto reads TTFT for streams and Total otherwise.
	Auto Signal = iota
	// TTFT is time from the call's start to its first body byte.
	TTFT
	// TPOT is time per output token after the first.
	TPOT
	// Total is the call's end-to-end time.
	Total
)

// ParseSignal maps a config name to its Signal; "" is Auto.
func ParseSignal(s string) (Signal, bool) {
	switch s {
	case "", "auto":
		return Auto, true
	case "ttft":
		return TTFT, true
	case "tpot":
		return TPOT, true
	case "total":
		return Total, true
	}
	return 0, false
}

// ScopeConfig configures one scope's limit.
type ScopeConfig struct {
	Name string
	// Limit moves the scope's concurrency limit. Nil means a fixed limit
	// of Fixed (0: unlimited).
	Limit limit.Algorithm
	Fixed int
	// Signal is the latency Limit reads.
	Signal Signal
	// SlowThreshold flags a call as a drop to Limit the moment it is
	// this old while still in flight. Zero leaves it to the breaker's
	// own threshold, or disables the in-flight check when there is no
	// breaker. It never changes what the breaker counts as slow.
	SlowThreshold time.Duration
	// Breaker, when set, takes the scope out of rotation while it is
	// unhealthy; a request then goes to the next of its Targets.
	Breaker *breaker.Breaker
	// Rescue: a call here that is slow while the breaker is open or
	// recovering (flagged before a trip, or after it) gets a second call
	// on the request's next target, racing the first; see rescue.go.
	Rescue bool
	// SyntheticProbes: the engine probes the half-open breaker with calls
	// of its own (Ready.Probe) and routes no user request to it until a
	// probe passes; see probe.go.
	SyntheticProbes bool
	// MinTokenRate is the slowest rate, in output tokens a second, at
	// which a healthy provider generates (0: DefaultMinTokenRate; below
	// 0: no allowance). With the Total signal (a whole answer's time), a
	// call is slow only past its threshold plus the time its output takes
	// at this rate: in flight, the output its request may produce (its
	// max_tokens, when it names one); at its end, the output it produced.
	// How much a client asks for is its own choice, not the provider's
	// health; see generation.
	MinTokenRate float64
	// Pool, when set, makes the scope a pool of replicas (pool.go): its
	// limit is the pool's (under Limit, if that is set too), each call
	// goes to the replica the pool picks, and each replica has its own
	// breaker, so Breaker should be nil.
	Pool *pool.Pool
}

// Config configures an Engine. Admission.Scopes is ignored: the engine
// builds it from Scopes.
type Config struct {
	Admission admission.Config
	Scopes    []ScopeConfig
	// Hedge budgets hedged requests; see HedgeConfig.
	Hedge HedgeConfig
	// Retry budgets retries on another target; see Engine.Retry.
	Retry RetryConfig
	// FirstToken is the first-token deadline (firsttoken.go).
	FirstToken FirstTokenConfig
	// Seed owns every random draw the engine makes (retry backoff, the
	// jitter on Retry-After), so a simulation replays exactly. A gateway
	// seeds it at random, so a fleet's replicas do not jitter in step.
	Seed uint64
	// Routes maps each client-facing model to its Route; the engine does
	// not read it, its hosts do (Route.Request), so the gateway and the
	// simulator route a model alike.
	Routes map[string]Route
	// Budgets are the token budgets of keys, the large-context lane,
	// providers and models (budgets.go).
	Budgets Budgets
	// KeyTenants[k-1] is key k's tenant (from 1). With any, admission is
	// fair between tenants (admission.Config.FairTenants): within a
	// class, a freed slot goes to the tenant with the fewest requests in
	// flight. Requests without a key are tenant 0.
	KeyTenants []int
	// DynamicKeys: keys may be added while the engine runs (SetKey), so
	// admission is fair between tenants even before the first one is.
	DynamicKeys bool
	// Replicas, when set, is the number of live replicas in the fleet
	// this engine is one of: its fixed concurrency limits (global,
	// per provider, per lane) are split between them (fleet.go).
	Replicas func() int
	// Parts, when set with Replicas, is this replica's part of the
	// fleet's fixed concurrency limits, in fleet.Whole (the host's
	// fleet.Claim.Parts): each limit gives it fleet.Slots of its calls,
	// and none at all while it holds no part. Nil: an equal part of the
	// replicas counted (fleet.Target(Replicas())), which is the limit
	// divided by them. The host reports each limit's calls in flight
	// back (SharedLoads) and calls Pump when the part grew. It is read
	// on every decision, so it must be quick and must not call the
	// engine.
	Parts func() int64
	// TimeScale multiplies the engine's own times and the admission
	// core's (timescale.go), for a host replaying a scenario t times as
	// fast; zero means 1. FromConfig sets it from a time-scaled config,
	// and scales the breakers' and limits' defaults by it too.
	TimeScale float64
	// HoldBudget is the longest a request whose every target is out of
	// rotation waits for a synthetic probe's verdict (hold.go): it is
	// held only when the verdict is due within it (and within its own
	// deadline), else refused at once. Zero means DefaultHoldBudget,
	// time-scaled; below zero, nobody is held.
	HoldBudget time.Duration
}

// Route is how a model's requests are routed and timed: its targets in
// failover order, the upstream model name at each, its deadline and its
// hedging.
type Route struct {
	// Name is the client-facing model's name.
	Name string
	// Targets are scope indices in failover order; Models the upstream
	// model name at each.
	Targets []int
	Models  []string
	// Continue is what each target can do to continue a broken stream,
	// in Targets' order: the caps a host passes Engine.Continue. Both
	// hosts read them here, so they cannot disagree about a target.
	Continue []ContinueCaps
	// Timeout is the request's deadline from its arrival.
	Timeout    time.Duration
	HedgeAfter time.Duration
	HedgeAtP95 bool
	// FirstTokenCeiling overrides the first-token deadline's ceiling for
	// the model's requests (Request.FirstTokenCeiling).
	FirstTokenCeiling time.Duration
	// Races: a request may get a second call that races its first (a
	// hedge, or a rescue from a target before the last), so a host
	// must be ready to run two calls at once.
	Races bool
	// Degrade, when set, says how the model's background requests are
	// served under pressure (Engine.ShouldDegrade).
	Degrade *Degradation
	// DefaultOutput is the output cap of a request naming no max_tokens
	// (its models' default_max_tokens; 0: Budgets.OutputReserve, else
	// DefaultMaxOutput): see books.perAnswer.
	DefaultOutput int64
	// InvalidFails: an answer that breaks the request's declared schema
	// (Outcome.Invalid) counts as an error in its provider's breaker.
	InvalidFails bool
	// ContextFallback names the model a prompt too long for this one
	// goes to; ContextWindow, when positive, is this model's window in
	// tokens, for routing there before the call (context.go).
	ContextFallback string
	ContextWindow   int64
}

// Wait is how long a request of the route may take: the route's
// timeout, or the client's own when shorter (zero: none asked). A client
// can shorten its wait, never lengthen it.
func (rt Route) Wait(clientTimeout time.Duration) time.Duration {
	if clientTimeout > 0 && clientTimeout < rt.Timeout {
		return clientTimeout
	}
	return rt.Timeout
}

// Request is the engine's request for one of the route's, due by now
// plus Wait(clientTimeout).
func (rt Route) Request(p admission.Priority, stream bool, now time.Time, clientTimeout time.Duration) Request {
	return Request{Priority: p, Model: rt.Name, Targets: rt.Targets, Models: rt.Models, Stream: stream, Deadline: now.Add(rt.Wait(clientTimeout)),
		HedgeAfter: rt.HedgeAfter, HedgeAtP95: rt.HedgeAtP95, FirstTokenCeiling: rt.FirstTokenCeiling, DefaultOutput: rt.DefaultOutput, InvalidFails: rt.InvalidFails}
}

// Request is what the engine needs to know about a request.
type Request struct {
	Priority admission.Priority
	// Scope indexes Config.Scopes, or admission.NoScope. It is the only
	// target when Targets is empty.
	Scope int
	// Targets are scopes in failover order: the engine routes the
	// request to the first whose breaker takes it (see route).
	Targets []int
	// Models are the upstream model at each target, for model budgets.
	Models []string
	Stream bool
	// Key, from 1, is the client's key in Budgets.Keys; 0: none.
	Key int
	// InputTokens is the request's input, as counted before the call;
	// MaxOutput its max_tokens (0: none named; NoOutput: an endpoint
	// that generates none, such as embeddings). They set what the
	// request reserves of its budgets, and its lane.
	InputTokens, MaxOutput int64
	// Choices is how many answers the request asks for, each up to
	// MaxOutput (OpenAI's n, or best_of when larger): it reserves that
	// many allowances. 0 or 1: one.
	Choices int64
	// DefaultOutput replaces Budgets.OutputReserve as the output cap of
	// a request that names no max_tokens, when positive
	// (Route.DefaultOutput; books.perAnswer).
	DefaultOutput int64
	// InvalidFails (Route.InvalidFails): an invalid answer is an error
	// for its provider's breaker.
	InvalidFails bool
	// Deadline is when the request's time runs out; zero means never.
	Deadline time.Time
	// HedgeAfter, when positive, sends a second call (a hedge) if the
	// first has no first byte this long after it started; see hedge.go.
	HedgeAfter time.Duration
	// HedgeAtP95 instead hedges after the routed target's recent healthy
	// p95, which its breaker keeps; with no breaker, or too few healthy
	// samples yet, there is no hedge.
	HedgeAtP95 bool
	// FirstTokenCeiling, when positive, replaces FirstTokenConfig.Ceiling
	// for this request; negative turns the first-token deadline off.
	FirstTokenCeiling time.Duration
	// Model is the client-facing model whose Route built the request
	// (Route.Request), for its targets' eval degradation
	// (SetEvalDegraded); "" for none.
	Model string
	// Degraded: the host serves it degraded (ShouldDegrade), the cheap
	// way pressure calls for, so admission lets it wait rather than
	// refuse it at the door (admission.Request.Degraded).
	Degraded bool
}

// OutcomeKind classifies how a call ended, as far as limits care.
type OutcomeKind uint8

const (
	// OK: the call answered (any 2xx).
	OK OutcomeKind = iota
	// Overloaded: the provider said it is at capacity (429, 503, 529).
	Overloaded
	// Failed: another upstream error (500, malformed response...).
	Failed
	// TimedOut: the request's deadline passed.
	TimedOut
	// ConnError: no usable connection to the provider.
	ConnError
	// Cancelled: the client went away first.
	Cancelled
)

var outcomeKindNames = [...]string{"ok", "overloaded", "failed", "timed_out", "conn_error", "cancelled"}

func (k OutcomeKind) String() string {
	if int(k) < len(outcomeKindNames) {
		return outcomeKindNames[k]
	}
	return "unknown"
}

// Outcome is how a call ended.
type Outcome struct {
	Kind OutcomeKind
	// RetryAfter is the provider's own Retry-After (or retry-after-ms),
	// when it sent one with a failure.
	RetryAfter time.Duration
	// Status is the upstream's HTTP status, when one came: a breaker
	// counts 429 as pacing, not as an error.
	Status int
	// OutputTokens, when known, lets the TPOT signal divide generation
	// time by tokens; with InputTokens it settles the request's budgets.
	// UsageKnown says the provider reported its output count; otherwise
	// OutputTokens is what the host counted of a partial or unreported
	// answer, 0 if nothing. InputTokens, when positive, is the
	// provider's count of the input, which settles it whatever else the
	// provider reported (a stream cut before its final usage included).
	OutputTokens int
	InputTokens  int64
	UsageKnown   bool
	// Invalid: the call answered (Kind OK), but its answer breaks the
	// structured output its request declared (package validate). Limits
	// and latency take it as the answer it is; the breaker counts it as
	// an error only when the request's InvalidFails says so; and it may
	// be retried, like a 5xx, while nothing has reached the client.
	Invalid bool
	// UnknownModel: a 404 by which the provider said the model (or the
	// path) the call named does not exist there (Ending.UnknownModel).
	// Only such a 404 counts against the provider: any other depends on
	// the request's body.
	UnknownModel bool
	// Ended is when the call really ended, when its host reports it
	// later: a tick host settles a whole tick at its end, as seed 000's
	// simulation does, but a call is judged by how long it took, not by
	// when the tick came. Zero (or a time not between the call's start
	// and the report) means the report's own time.
	Ended time.Time
}

// Ready lists what the host must do after a call into the engine.
type Ready struct {
	// Start: these requests hold a slot now; start their upstream calls.
	Start []ID
	// Refuse: these waiting requests were refused; answer them 503/529.
	Refuse []admission.Refusal
	// Expire: these in-flight requests passed their deadline; cancel
	// their calls, answer 504, and Finish them as TimedOut.
	Expire []ID
	// Abandon: these in-flight requests cannot be answered before their
	// deadline (abandon.go); cancel their calls, answer 503/529 with the
	// RetryAfter, and End them as Cancelled.
	Abandon []admission.Refusal
	// Transitions are breaker state changes, each reported once, for the
	// host to log and count.
	Transitions []Transition
	// Second: start a second call (a hedge, a rescue or a retry) for
	// these requests, to the given target; the host reports it with
	// Commit(…, 1) and End(…, 1, …).
	Second []SecondCall
	// Probe: send these synthetic probes, each ended by its Deadline, and
	// report each with FinishProbe.
	Probe []ProbeStart
}

// Transition is one breaker state change of a scope, or of one of a
// pooled scope's replicas.
type Transition struct {
	Scope int
	// Replica, from 1, names the replica of a pool whose breaker moved;
	// 0 is the scope's own breaker.
	Replica int
	breaker.Transition
}

// Merge appends o's actions to r, for a host that gathers the Ready of
// several calls before carrying them out.
func (r *Ready) Merge(o Ready) {
	r.Start = append(r.Start, o.Start...)
	r.Refuse = append(r.Refuse, o.Refuse...)
	r.Expire = append(r.Expire, o.Expire...)
	r.Abandon = append(r.Abandon, o.Abandon...)
	r.Transitions = append(r.Transitions, o.Transitions...)
	r.Second = append(r.Second, o.Second...)
	r.Probe = append(r.Probe, o.Probe...)
}

// Arrival is Arrive's verdict on the arriving request itself.
type Arrival struct {
	ID ID
	// Target indexes Request.Targets: where the request was routed (0
	// unless the first target's breaker turned it away).
	Target  int
	Verdict admission.Verdict
	// Refusal is set when Verdict is admission.Rejected.
	Refusal admission.Refusal
	// Budget is the refusing budget's verdict when Refusal's reason is
	// a key's or the lane's budget: its dimension, and Never for a
	// request larger than the budget's burst, which no wait lets through.
	Budget quota.Verdict
}

type scope struct {
	cfg     ScopeConfig
	limiter admission.Limiter
	// instant and inFlight: the scope's in-flight count at the start of
	// the instant the last call ended (see inFlightAt).
	instant  time.Time
	inFlight int
	// What the scope's calls show of its latency (reach.go): the last
	// answer's, the age at which calls were answered early for being out
	// of reach, and the estimate as of estAt. outForSlowness: its breaker
	// is open for slowness, not errors.
	latest, floor, est time.Duration
	estAt              time.Time
	outForSlowness     bool
	// rates: the generation rates (output tokens a second) of the
	// scope's last whole answers that were not slow, judged at their
	// ends; next is the ring's write index (learnRate).
	rates [rateRing]float64
	next  int
	// ticker is cfg.Limit when it closes windows on the clock, else nil.
	ticker ticker
}

// settling notes that a call on scope s ends at now, before its slot is
// released, so that every sample taken at now carries the in-flight
// count from before the first of them (inFlightAt).
func (e *Engine) settling(now time.Time, s int) {
	if sc := e.scope(s); sc != nil && sc.cfg.Limit != nil && !now.Equal(sc.instant) {
		sc.instant, sc.inFlight = now, e.adm.InFlight(s)
	}
}

// inFlightAt is the in-flight count a sample on scope s taken at now
// carries: the count at the start of the instant, before any call that
// ended at now left. A tick simulation settles a whole tick's calls at
// one instant and passes each the count from before the tick's
// settlement, as seed 000's does; calls that end at distinct instants,
// as a gateway's do, each see the live count, their own call included.
func (e *Engine) inFlightAt(now time.Time, s int) int {
	if sc := e.scope(s); sc != nil && now.Equal(sc.instant) {
		return sc.inFlight
	}
	return e.adm.InFlight(s)
}

// ticker is a limit that closes windows on the clock, not only on
// samples (limit.WindowedAIMD). NextTick is when its open window ends, if
// that window holds a sample to act on; NextTimer includes it, so a
// window full of 429s is acted on when it ends even if traffic has
// stopped, in every host alike.
type ticker interface {
	Tick(now time.Time)
	NextTick() (time.Time, bool)
}

// algLimiter lets admission read an algorithm's current limit.
type algLimiter struct{ alg limit.Algorithm }

func (l algLimiter) Limit() int { return l.alg.Limit() }

type request struct {
	id        ID
	req       Request
	arrived   time.Time
	started   time.Time // zero while waiting
	firstByte time.Time
	slow      bool // reported slow to its breaker while in flight
	dropped   bool // reported to its limit as a drop while in flight
	// allow: the generation allowance its in-flight slow checks wait
	// beyond their thresholds (generation).
	allow     time.Duration
	scope     int // the routed target's scope
	target    int // index into req.Targets
	ticket    breaker.Ticket
	hasTicket bool
	// held: waiting for a synthetic probe's verdict on its scope, with
	// no ticket (hold.go). through: routed to a scope out of rotation
	// that can still answer it in time, with no ticket (reach.go).
	held, through bool
	// stranded: slow on an unhealthy provider, waiting for room on
	// another target for its rescue (rescue.go).
	stranded bool
	// timers holds, per timer kind (timers.go), when it fires and the
	// request's index in that kind's heap (-1: not armed).
	timerAt  [numTimers]time.Time
	timerKey [numTimers]int64 // timerAt as the heap orders it (timers.go)
	timerIdx [numTimers]int
	timerArm [numTimers]uint64 // the arming its FIFO entry is under (timers.go)
	// The second call, when one was sent (see hedge.go).
	second      *secondCall
	primaryDone bool
	committed   int8 // the call whose answer the client gets; -1: none yet
	// expired: the request is in a Ready's Expire; the host is ending it,
	// so it gets no second call.
	expired bool
	// firstTokenDue: the race timer (hedgeT) is the first-token deadline,
	// not a hedge; firstTokenRace: the second call is the deadline's
	// (firsttoken.go).
	firstTokenDue, firstTokenRace bool
	// usage holds how each call (first, second) ended, for settling its
	// budgets; charged, from 1, the target each call was charged to.
	usage   [2]Outcome
	charged [2]int
	// chargedN: the multiplier each call was charged with (books.share).
	chargedN [2]int64
	// picks: the replica each call went to on a pooled scope, when
	// picked (pool.go).
	picks  [2]pool.Pick
	picked [2]bool
	// retired: a failed same-target retry that a call on the next
	// target replaced, until its End (retry.go).
	retired *retiredCall
}

// Engine is the lifecycle state machine. See the package comment.
type Engine struct {
	adm    *admission.Core
	scopes []*scope
	// splits are the fixed limits shared with the fleet (fleet.go).
	splits []split
	reqs   tickets.Table[ID, *request]
	slow   timerHeap // in-flight requests by when their breaker calls them slow
	dropT  timerHeap // in-flight requests by when their limit counts a drop
	dead   timerHeap // in-flight requests by deadline
	hedgeT timerHeap // in-flight requests by when to hedge
	// abandonT: slow calls with nowhere to go, by when to judge whether
	// their provider can still meet their deadline (abandon.go).
	abandonT timerHeap
	// stranded: slow calls on an unhealthy provider waiting for room on
	// another target (rescue.go).
	stranded []*request
	// holding: per scope, whether its waiters are held for a probe's
	// verdict (hold.go).
	holding []bool
	hold    holds
	hedges  budget
	ft      firstToken
	// retries holds one retry budget per scope, earned by the requests
	// routed there and spent by retries of that scope's failures.
	retries  []budget
	retryCfg RetryConfig
	rng      *rand.Rand // retry jitter, seeded from Config.Seed
	// timeScale is Config.TimeScale (timescale.go).
	timeScale float64
	// probes are the synthetic probes in flight (probe.go).
	probes    map[ProbeID]*probeCall
	lastProbe ProbeID
	probeWait []time.Time // per scope: no probe before (probe.go)
	// share accumulates each scope's fail-back weight, so a scope at 25%
	// takes exactly every fourth request offered to it: deterministic,
	// with no random draw.
	share []float64
	// paused holds, per scope, until when its provider asked for no more
	// calls (pause.go); newlyPaused lists the scopes whose pause began
	// since the last settle.
	paused      []time.Time
	newlyPaused []int
	// books are the token budgets (budgets.go).
	books books
	// evalDegraded holds, per model, which of its targets its evals
	// degraded (evaldegraded.go).
	evalDegraded map[string][]bool
	// keyTenants maps a key (from 1) to its tenant.
	keyTenants []int
	// poolOutSeen: per scope, its pool was out of rotation at the last
	// Tick (poolEdge).
	poolOutSeen []bool
	// spare holds requests that have left, for Arrive to reuse
	// (recycle.go).
	spare []*request
}

// tenant is r's tenant for admission's fairness: its key's, or 0.
func (e *Engine) tenant(r Request) int {
	if k := r.Key - 1; k >= 0 && k < len(e.keyTenants) {
		return e.keyTenants[k]
	}
	return 0
}

// New builds an Engine.
func New(cfg Config) *Engine {
	e := &Engine{probes: make(map[ProbeID]*probeCall)}
	e.slow.kind, e.dropT.kind, e.dead.kind, e.hedgeT.kind, e.abandonT.kind = slowTimer, dropTimer, deadTimer, hedgeTimer, abandonTimer
	e.hedges = newBudget(cfg.Hedge)
	e.ft.cfg = cfg.FirstToken
	e.timeScale = cfg.TimeScale
	e.retryCfg = cfg.Retry
	if e.retryCfg.Base <= 0 {
		e.retryCfg.Base = e.scaled(100 * time.Millisecond)
	}
	e.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x7e7))
	e.retries = make([]budget, len(cfg.Scopes))
	for i := range e.retries {
		e.retries[i] = newBudget(HedgeConfig{Budget: cfg.Retry.Budget, Burst: cfg.Retry.Burst})
	}
	limiters := make([]admission.Limiter, len(cfg.Scopes))
	for i, sc := range cfg.Scopes {
		s := &scope{cfg: sc}
		var fixed admission.Limiter = admission.Fixed(sc.Fixed)
		if sc.Pool != nil {
			fixed = poolLimiter{sc.Pool}
		}
		switch {
		case sc.Limit == nil:
			s.limiter = e.fleetShare(fixed, cfg, i, 0)
		case sc.Pool != nil:
			s.limiter = minLimiter{algLimiter{sc.Limit}, e.fleetShare(fixed, cfg, i, 0)}
		default:
			s.limiter = algLimiter{sc.Limit}
		}
		s.ticker, _ = sc.Limit.(ticker)
		limiters[i] = s.limiter
		e.scopes = append(e.scopes, s)
	}
	e.share = make([]float64, len(cfg.Scopes))
	e.probeWait = make([]time.Time, len(cfg.Scopes))
	e.paused = make([]time.Time, len(cfg.Scopes))
	e.holding = make([]bool, len(cfg.Scopes))
	e.hold = newHolds(cfg, e)
	e.poolOutSeen = make([]bool, len(cfg.Scopes))
	e.books = newBooks(cfg.Budgets)
	e.books.replicas = cfg.Replicas
	ac := cfg.Admission
	ac.Scopes = limiters
	ac.Global = e.fleetShare(ac.Global, cfg, admission.NoScope, 0)
	lanes := make([]admission.Limiter, len(ac.Lanes))
	for i, l := range ac.Lanes {
		lanes[i] = e.fleetShare(l, cfg, admission.NoScope, i+1)
	}
	ac.Lanes = lanes
	ac.Seed = cfg.Seed ^ 0xad31
	ac.TimeScale = cfg.TimeScale
	ac.FairTenants = len(cfg.KeyTenants) > 0 || cfg.DynamicKeys
	e.keyTenants = append([]int(nil), cfg.KeyTenants...)
	e.adm = admission.NewCore(ac)
	return e
}

// Check reports whether a request would be refused at once, without
// changing anything: the host asks it from the headers alone.
func (e *Engine) Check(now time.Time, r Request) (admission.Refusal, bool) {
	return e.adm.Check(now, admission.Request{Priority: r.Priority, Scope: r.Scope, Tenant: e.tenant(r), Deadline: r.Deadline})
}

// Arrive routes a new request to a target, then admits, queues or
// refuses it there. Ready carries waiters that this arrival displaced.
func (e *Engine) Arrive(now time.Time, r Request) (Arrival, Ready) {
	var rd Ready
	if refusal, v, ok := e.books.reserveFor(now, r); !ok {
		e.settle(now, &rd)
		return Arrival{Verdict: admission.Rejected, Refusal: refusal, Budget: v}, rd
	}
	p, ok := e.route(now, r)
	var holdEnd time.Time
	if ok && p.held {
		holdEnd, ok = e.holdable(now, p.scope, r)
	}
	unavailable := admission.Refusal{Priority: r.Priority, Reason: admission.ReasonUnavailable}
	if !ok {
		e.books.refund(now, r)
		e.settle(now, &rd)
		unavailable.RetryAfter = e.untilAvailable(now, r)
		return Arrival{Verdict: admission.Rejected, Refusal: unavailable}, rd
	}
	res := e.adm.Admit(now, admission.Request{Priority: r.Priority, Scope: p.scope, Lane: e.books.lane(r), Tenant: e.tenant(r), Deadline: r.Deadline, Held: p.held, Degraded: r.Degraded})
	rd.Refuse = res.Displaced
	for _, f := range res.Displaced {
		e.drop(now, f.Ticket)
	}
	a := Arrival{ID: res.Ticket, Target: p.target, Verdict: res.Verdict, Refusal: res.Refusal}
	if res.Verdict == admission.Rejected {
		e.books.refund(now, r)
		if p.hasTicket {
			e.scopes[p.scope].cfg.Breaker.Done(now, p.ticket, breaker.Outcome{Kind: breaker.Cancelled})
		}
		if p.held {
			// No room to wait in: the provider, not the queue, is why.
			unavailable.RetryAfter = e.untilAvailable(now, r)
			a.Refusal = unavailable
		}
		e.settle(now, &rd)
		return a, rd
	}
	q := e.newRequest()
	*q = request{id: res.Ticket, req: r, arrived: now, timerIdx: unarmed, committed: -1,
		scope: p.scope, target: p.target, ticket: p.ticket, hasTicket: p.hasTicket, held: p.held, through: p.through}
	e.reqs.Put(q.id, q)
	e.hedges.earn()
	if p.scope >= 0 && p.scope < len(e.retries) {
		e.retries[p.scope].earn()
	}
	if res.Verdict == admission.Admitted {
		e.start(now, q)
	} else if p.held {
		e.armHold(q, holdEnd)
	}
	e.settle(now, &rd)
	return a, rd
}

// targets returns a request's failover chain.
func targets(r Request) []int {
	if len(r.Targets) > 0 {
		return r.Targets
	}
	return []int{r.Scope}
}

// route picks a target for r among those not degraded by their evals
// first, then among the degraded ones (evaldegraded.go).
func (e *Engine) route(now time.Time, r Request) (placement, bool) {
	deg := e.degradedTargets(r)
	if deg == nil {
		return e.routeAmong(now, r, nil)
	}
	p, ok := e.routeAmong(now, r, func(i int) bool { return deg[i] })
	if ok && !p.held {
		return p, true
	}
	q, ok2 := e.routeAmong(now, r, func(i int) bool { return !deg[i] })
	if ok2 && !q.held {
		return q, true
	}
	if ok {
		return p, true
	}
	return q, ok2
}

// routeAmong picks, among the targets skip does not rule out (nil: all),
// the first whose breaker takes the request: a closed
// breaker always; a recovering one for its share of the traffic (its
// step's weight, accumulated so the share is exact and needs no random
// draw); a half-open one while it has probes to give. With no breaker
// a target always takes it, unless its provider asked for a pause
// (pause.go). ok is false when every target is turned away: when every
// provider is unhealthy, Sluice sheds rather than search for a fast
// provider that does not exist.
func (e *Engine) routeAmong(now time.Time, r Request, skip func(int) bool) (placement, bool) {
	passed := -1 // a recovering target passed over for its share
	hold := -1   // a target probed synthetically, to wait for (hold.go)
	for i, s := range targets(r) {
		if (skip != nil && skip(i)) || e.closed(now, r, i) {
			continue
		}
		sc := e.scope(s)
		if sc == nil || sc.cfg.Breaker == nil {
			return placement{target: i, scope: s}, true
		}
		b := sc.cfg.Breaker
		if w := b.Weight(now); w < 1 {
			if w <= 0 {
				if sc.cfg.SyntheticProbes {
					if hold < 0 {
						hold = i
					}
					continue // probing with calls of its own
				}
				if st, _ := b.State(now); st != breaker.HalfOpen {
					continue // open
				}
			} else if e.share[s] += w; e.share[s] < 1-1e-9 { // 10 × 0.1 must make 1
				if passed < 0 {
					passed = i
				}
				continue
			} else {
				e.share[s]--
			}
		}
		if tk, err := b.Allow(now); err == nil {
			return placement{target: i, scope: s, ticket: tk, hasTicket: true}, true
		}
	}
	// Fail-back shares shift traffic between targets; with nowhere else
	// to go, a recovering target takes the request rather than shed it.
	if passed >= 0 {
		s := targets(r)[passed]
		if tk, err := e.scopes[s].cfg.Breaker.Allow(now); err == nil {
			return placement{target: passed, scope: s, ticket: tk, hasTicket: true}, true
		}
	}
	// Every target is out of rotation. One whose provider can still
	// answer before the request's deadline serves it anyway (reach.go);
	// else the request waits for a synthetic probe's verdict (hold.go),
	// or is refused.
	if i, ok := e.reachable(now, r, skip); ok {
		return placement{target: i, scope: targets(r)[i], through: true}, true
	}
	if hold >= 0 {
		return placement{target: hold, scope: targets(r)[hold], held: true}, true
	}
	return placement{}, false
}

// placement is where route sent a request: a target, its scope and the
// scope breaker's ticket, if it has a breaker. Out of rotation, it is
// held (a target whose breaker decides by probes of its own, to wait for
// their verdict) or through (a target that can still answer in time,
// without a ticket: its breaker is open).
type placement struct {
	target, scope int
	ticket        breaker.Ticket
	hasTicket     bool
	held, through bool
}

// place moves a waiting request to p, handing back the breaker ticket
// it held.
func (e *Engine) place(now time.Time, q *request, p placement) {
	if q.hasTicket {
		e.scopes[q.scope].cfg.Breaker.Done(now, q.ticket, breaker.Outcome{Kind: breaker.Cancelled})
	}
	if p.scope != q.scope {
		e.adm.Rescope(q.id, p.scope)
	}
	if p.held != q.held {
		e.adm.Hold(q.id, p.held)
	}
	q.target, q.scope, q.ticket, q.hasTicket, q.held, q.through = p.target, p.scope, p.ticket, p.hasTicket, p.held, p.through
}

// untilAvailable is when the first of a request's targets will take
// traffic again (a pause's end, a breaker's next transition, or the next
// synthetic probe's verdict: hold.go), for an honest Retry-After.
func (e *Engine) untilAvailable(now time.Time, r Request) time.Duration {
	var soonest time.Duration
	verdict := false // soonest is a probe's verdict, due exactly then
	consider := func(d time.Duration, v bool) {
		if d > 0 && (soonest == 0 || d < soonest) {
			soonest, verdict = d, v
		}
	}
	for i, s := range targets(r) {
		if w := e.books.targetWait(now, r, i); w > 0 {
			consider(w, false)
			continue
		}
		if e.isPaused(now, s) {
			consider(e.paused[s].Sub(now), false)
			continue
		}
		if sc := e.scope(s); sc != nil && sc.cfg.Breaker != nil {
			if at, ok := e.outVerdict(now, s); ok {
				consider(at.Sub(now), true)
			} else if at, ok := sc.cfg.Breaker.NextTimer(); ok {
				consider(at.Sub(now), false)
			}
		}
	}
	if verdict {
		return max(soonest, e.scaled(admission.MinRetryAfter))
	}
	return max(soonest, e.scaled(time.Second))
}

// transitions drains every breaker's state changes.
func (e *Engine) transitions() []Transition {
	var out []Transition
	for i, sc := range e.scopes {
		if sc.cfg.Breaker != nil {
			for _, t := range sc.cfg.Breaker.Transitions() {
				out = append(out, Transition{Scope: i, Transition: t})
			}
		}
	}
	return append(out, e.poolTransitions()...)
}

// drop forgets a request that left before starting (displaced, expired,
// withdrawn), handing back its breaker ticket.
func (e *Engine) drop(now time.Time, id ID) {
	if q, ok := e.reqs.Get(id); ok {
		if q.hasTicket {
			e.scopes[q.scope].cfg.Breaker.Done(now, q.ticket, breaker.Outcome{Kind: breaker.Cancelled})
		}
		e.books.refund(now, q.req)
		e.reqs.Delete(id)
		e.recycle(q)
	}
}

// start moves a request into flight and arms its timers.
func (e *Engine) start(now time.Time, q *request) {
	q.started = now
	e.pick(now, q, 0, q.scope)
	q.chargedN[0] = e.books.charge(now, q.req, q.target)
	q.charged[0] = q.target + 1
	// Slow means past a threshold, not at it. The breaker and the limit
	// each judge by their own threshold; a limit without one hears of a
	// call when the breaker calls it slow.
	// A whole answer may take as long as its output cap (its max_tokens,
	// or the default it reserves without one) takes to generate on top,
	// at the rate the provider has shown (inFlightAllowance).
	q.allow = 0
	if sc := e.scope(q.scope); sc != nil {
		q.allow = e.inFlightAllowance(sc, q)
	}
	if q.hasTicket {
		e.slow.push(q, now.Add(q.ticket.SlowAfter()+q.allow+time.Nanosecond))
	} else if sc := e.scope(q.scope); q.through && sc != nil && sc.cfg.Breaker != nil {
		e.slow.push(q, now.Add(sc.cfg.Breaker.SlowThreshold()+q.allow+time.Nanosecond))
	}
	if sc := e.scope(q.scope); sc != nil && sc.cfg.Limit != nil && sc.cfg.SlowThreshold > 0 {
		e.dropT.push(q, now.Add(sc.cfg.SlowThreshold+q.allow+time.Nanosecond))
	}
	deadline := q.req.Deadline
	if q.hasTicket && q.ticket.Probe() {
		// A probe ends at its own timeout: the user is not held to the
		// whole deadline by a provider that is probably still unwell.
		if pd := q.ticket.ProbeDeadline(); deadline.IsZero() || pd.Before(deadline) {
			deadline = pd
		}
	}
	if !deadline.IsZero() {
		e.dead.push(q, deadline)
	}
	e.armSecond(now, q)
}

func (e *Engine) scope(i int) *scope {
	if i >= 0 && i < len(e.scopes) {
		return e.scopes[i]
	}
	return nil
}

// signal resolves Auto for one request.
func (e *Engine) signal(sc *scope, q *request) Signal {
	if sc.cfg.Signal != Auto {
		return sc.cfg.Signal
	}
	if q.req.Stream {
		return TTFT
	}
	return Total
}

// FirstByte records that a call's first body byte arrived. For the TTFT
// signal, the call can no longer be flagged slow.
func (e *Engine) FirstByte(now time.Time, id ID) {
	q, ok := e.reqs.Get(id)
	if !ok || q.started.IsZero() || !q.firstByte.IsZero() {
		return
	}
	q.firstByte = now
	e.hedgeT.remove(q) // an answer is coming: no hedge, and none abandoned
	e.abandonT.remove(q)
	if sc := e.scope(q.scope); sc != nil && e.signal(sc, q) == TTFT {
		e.slow.remove(q)
		e.dropT.remove(q)
	}
}

// Target is where the engine routed a request: an index into its
// Targets. A host reads it when the request starts, since a waiter may
// have been moved to another target while it waited (see reroute).
func (e *Engine) Target(id ID) (int, bool) {
	if q, ok := e.reqs.Get(id); ok {
		return q.target, true
	}
	return 0, false
}

// Leave withdraws a waiting request whose client went away. It reports
// false if the request is not waiting; an in-flight request ends with
// Finish(Cancelled) instead.
func (e *Engine) Leave(now time.Time, id ID) bool {
	if !e.adm.Leave(now, id) {
		return false
	}
	e.drop(now, id)
	return true
}

// Finish ends an in-flight request: its slot is released, its outcome
// becomes a limit sample, and waiters that now fit are started. ok is
// false if id was not in flight (a second Finish changes nothing).
func (e *Engine) Finish(now time.Time, id ID, o Outcome) (rd Ready, ok bool) {
	q, found := e.reqs.Get(id)
	if !found || q.started.IsZero() || q.primaryDone {
		return rd, false
	}
	e.observeRefusal(now, q.scope, o)
	e.settling(now, q.scope)
	e.heard(now, q.scope, q.started, q.firstByte, o)
	e.noteTTFT(q.scope, q.req.Stream, q.started, q.firstByte, o)
	q.usage[0] = o
	sc := e.scope(q.scope)
	end := q.ended(now, q.started, o)
	if sc != nil && sc.cfg.Limit != nil && !q.dropped {
		if s, use := e.sample(now, end, sc, q, o); use {
			sc.cfg.Limit.Update(s)
		}
	}
	e.lostFirstTokenRace(now, q, o)
	if q.hasTicket {
		bo := breakerOutcome(e.signal(sc, q), q.started, q.firstByte, end, o, q.req.InvalidFails)
		bo.Allowance = e.generation(sc, q, o.OutputTokens)
		sc.cfg.Breaker.Done(now, q.ticket, bo)
	}
	if sc != nil {
		e.learnRate(sc, q, end, o)
	}
	e.unpick(now, q, 0, q.scope, q.started, q.firstByte, o)
	e.slow.remove(q)
	e.dropT.remove(q)
	e.hedgeT.remove(q)
	e.abandonT.remove(q)
	q.primaryDone = true
	if q.second != nil && q.second.live {
		// The request goes on in its hedge; it ends with FinishSecond.
		e.settle(now, &rd)
		return rd, true
	}
	return e.complete(now, q), true
}

// complete ends a request whose calls have all finished: its admission
// slot is released and waiters that now fit are started.
func (e *Engine) complete(now time.Time, q *request) (rd Ready) {
	e.settleBudgets(now, q)
	e.dead.remove(q)
	e.abandonT.remove(q)
	e.reqs.Delete(q.id)
	e.recycle(q)
	// If this request's outcome tripped its provider's breaker, the
	// waiters for that provider move on (settle) before the slot it frees
	// is handed out, or the oldest of them would start on the provider
	// just judged unhealthy.
	e.settle(now, &rd)
	// The host's Tick for a waiter whose time ran out may not have come
	// yet (in the Runner, the timer and this Finish race for the lock).
	// Started, that waiter would spend an upstream call it has no time
	// for, and its TimedOut would reach the limit as a false drop.
	rd.Refuse = append(rd.Refuse, e.expireWaiters(now)...)
	e.adm.Free(now, q.id)
	e.pump(now, &rd)
	return rd
}

// pump hands out room that has freed: first to the stranded calls
// waiting to be rescued (rescue.go), which have waited longest and
// have least time left, then to the queue.
func (e *Engine) pump(now time.Time, rd *Ready) {
	e.rescueStranded(now, rd)
	rd.Start = append(rd.Start, e.started(now, e.adm.Pump(now))...)
}

// DefaultMinTokenRate is ScopeConfig.MinTokenRate's default, in output
// tokens a second: well under what any provider Sluice fronts generates
// when healthy (tens to hundreds a second), so that only a provider
// slower than this at generating, or slow before it starts, is slow.
const DefaultMinTokenRate = 20

// generation is how long tokens output tokens take at the scope's
// slowest healthy rate (ScopeConfig.MinTokenRate), for a call judged by
// its whole time (the Total signal: a whole answer's, or a stream's
// when configured so): the time its slow checks allow beyond their
// thresholds. Judging a whole answer by its length would make one client
// asking for long answers trip its provider's breaker for everyone;
// judged this way, a provider is slow when it is slow to start or slow
// to generate. With the TTFT and TPOT signals, length never counts.
func (e *Engine) generation(sc *scope, q *request, tokens int) time.Duration {
	rate := sc.cfg.MinTokenRate
	if rate == 0 {
		rate = DefaultMinTokenRate
	}
	if rate < 0 || tokens <= 1 || e.signal(sc, q) != Total {
		return 0
	}
	return e.scaled(time.Duration(float64(tokens-1) * float64(time.Second) / rate))
}

// rateRing is how many recent answers' generation rates a scope keeps
// (scope.rates).
const rateRing = 16

// inFlightAllowance is how long past its thresholds a call of q's on sc
// is watched before it is flagged slow while in flight: the time its
// output cap (books.perAnswer: its max_tokens, or without one the
// default it reserves) takes at the generation rate the scope's recent
// healthy whole answers showed (their median, so one client's answers
// cannot set it), never more than at ScopeConfig.MinTokenRate, and at
// most half its breaker's window (a flag later than that would land
// among start times the slow rate no longer judges, and a brownout would
// never trip). A whole answer gives no sign of progress until it ends,
// so a long answer and a silent provider look alike in flight; a request
// that names no max_tokens is allowed what it may generate, as one
// that names the default is, so leaving it out trips nothing. Until the
// provider has shown a rate, there is no allowance: the first requests
// into a broken provider are judged at the threshold, as every request
// was before; a long answer flagged then is judged again at its end by
// what it produced (generation), and teaches the rate.
func (e *Engine) inFlightAllowance(sc *scope, q *request) time.Duration {
	out := e.books.perAnswer(q.req)
	if out <= 1 || e.generation(sc, q, 2) == 0 {
		return 0
	}
	var buf [rateRing]float64
	rs := buf[:0]
	for _, r := range sc.rates {
		if r > 0 {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	tokens := int(min(out, 1<<20))
	allow := min(time.Duration(float64(tokens-1)*float64(time.Second)/rs[len(rs)/2]), e.generation(sc, q, tokens))
	if b := sc.cfg.Breaker; b != nil {
		allow = min(allow, b.Window()/2)
	}
	return allow
}

// learnRate notes the generation rate of q's whole answer o on sc, ended
// at end, when the answer was not slow by its end's judgement: within
// its threshold and the time its output takes at MinTokenRate.
func (e *Engine) learnRate(sc *scope, q *request, end time.Time, o Outcome) {
	if o.Kind != OK || o.OutputTokens <= 1 || e.generation(sc, q, 2) == 0 {
		return
	}
	lat := end.Sub(q.started)
	threshold := e.dropAfter(sc, q)
	if sc.cfg.Breaker != nil && threshold == 0 {
		threshold = sc.cfg.Breaker.SlowThreshold()
	}
	if lat <= 0 || threshold <= 0 || lat > threshold+e.generation(sc, q, o.OutputTokens) {
		return
	}
	sc.rates[sc.next] = float64(o.OutputTokens-1) / lat.Seconds()
	sc.next = (sc.next + 1) % rateRing
}

// ended is when a call of q's that started at started, reported at now
// with o, really ended, for judging its latency: the host's o.Ended, or
// for a timeout the deadline that ended it, when either lies between the
// start and now; else now. A tick host reports a whole tick's ends at
// its close, and would otherwise make every call up to a tick slower
// than it was (seed 000 judges each call by its own end).
func (q *request) ended(now, started time.Time, o Outcome) time.Time {
	at := o.Ended
	if at.IsZero() && o.Kind == TimedOut {
		at = q.req.Deadline
		if q.hasTicket && q.ticket.Probe() {
			if pd := q.ticket.ProbeDeadline(); at.IsZero() || pd.Before(at) {
				at = pd
			}
		}
	}
	if at.IsZero() || at.After(now) || at.Before(started) {
		return now
	}
	return at
}

// breakerOutcome says how a call counts for its provider's breaker: a
// 429 is pacing, not an error; a timeout, a connection error, a 5xx or
// a 529 is an error, and so is a 401, 403 or 408 (a target that refuses
// our key or times out fails every request), and a 404 that says the
// model or the path is unknown there (o.UnknownModel: the gateway's
// route is wrong, so every request fails); any other 4xx, a 404 about
// something the body names (a stored response, a file, a tool's
// resource) included, is the request's own fault and says nothing about
// the provider: one client's bad requests must not move the others'. An invalid answer is an error when invalidFails, else the
// answer it is. The latency is the scope's signal, like the limit's.
func breakerOutcome(sig Signal, started, firstByte, now time.Time, o Outcome, invalidFails bool) breaker.Outcome {
	lat := now.Sub(started)
	if sig == TTFT && !firstByte.IsZero() {
		lat = firstByte.Sub(started)
	}
	switch o.Kind {
	case OK:
		if o.Invalid && invalidFails {
			return breaker.Outcome{Kind: breaker.Error, Latency: lat}
		}
		return breaker.Outcome{Kind: breaker.OK, Latency: lat}
	case TimedOut:
		// Slow if it ran past the slow threshold; a shorter deadline was
		// the client's choice.
		return breaker.Outcome{Kind: breaker.TimedOut, Latency: lat}
	case Cancelled:
		return breaker.Outcome{Kind: breaker.Cancelled}
	case Overloaded:
		if o.Status == 429 {
			return breaker.Outcome{Kind: breaker.RateLimited}
		}
	case Failed:
		switch s := o.Status; {
		case s == 401, s == 403, s == 408, s == statusNotFound && o.UnknownModel:
		case s >= 400 && s < 500:
			return breaker.Outcome{Kind: breaker.Cancelled}
		}
	}
	return breaker.Outcome{Kind: breaker.Error}
}

// expireWaiters refuses the waiters whose wait has run out by now.
func (e *Engine) expireWaiters(now time.Time) []admission.Refusal {
	out := e.adm.Expire(now)
	for _, f := range out {
		e.drop(now, f.Ticket)
	}
	return out
}

// sample turns an outcome into a limit sample, or reports that it is not
// one. now is when the host reported the call; end when it really ended
// (request.ended), which its latency is judged by.
//
// The in-flight check (dropAfter: the limit's slow threshold, or the
// breaker's) watches a call from its start until it ends, or, for the
// TTFT signal, until its first byte; it reports the call a drop the
// moment it is past the threshold (Tick). When one instant brings a
// call's end and its flag, the end comes first, as in seed 000's tick
// (answered, then timed out, then flagged slow), and the sample says:
//
//   - a timeout the check still watched is no drop of its own: past the
//     threshold before its deadline it was flagged then, and a deadline
//     at or before the threshold is the client's choice (one client
//     asking for a millisecond must not shrink the limit for everyone);
//     one no check watched is a drop if it ran to the threshold;
//   - an answer past the threshold that the check had not yet flagged is
//     no sample: it is not a fast answer, and seed 000 sends no drop.
func (e *Engine) sample(now, end time.Time, sc *scope, q *request, o Outcome) (limit.Sample, bool) {
	s := limit.Sample{Now: now, InFlight: e.inFlightAt(now, q.scope), QueueWait: q.started.Sub(q.arrived)}
	after := e.dropAfter(sc, q)
	sig := e.signal(sc, q)
	watched := after > 0 && (sig != TTFT || q.firstByte.IsZero() || q.firstByte.Sub(q.started) > after)
	total := end.Sub(q.started)
	switch o.Kind {
	case TimedOut:
		s.Dropped = true
		return s, !watched && total >= after
	case Overloaded, ConnError:
		s.Dropped = true
		return s, true
	case OK:
		if watched && total > after+e.generation(sc, q, o.OutputTokens) {
			return s, false
		}
	default:
		return s, false
	}
	switch sig {
	case TTFT:
		s.Latency = total
		if !q.firstByte.IsZero() {
			s.Latency = q.firstByte.Sub(q.started)
			if end.Before(q.firstByte) {
				s.Latency = total // a host that reports a whole answer's byte at its tick
			}
		}
	case TPOT:
		s.Latency = total
		if !q.firstByte.IsZero() && o.OutputTokens > 1 && end.After(q.firstByte) {
			s.Latency = end.Sub(q.firstByte) / time.Duration(o.OutputTokens-1)
		}
	default:
		s.Latency = total
	}
	return s, true
}

// started arms the timers of requests admission just granted.
func (e *Engine) started(now time.Time, ids []ID) []ID {
	for _, id := range ids {
		if q, ok := e.reqs.Get(id); ok {
			e.start(now, q)
		}
	}
	return ids
}

// Tick fires every timer due by now: queue expiries, slow flags (which
// may move limits and so start waiters) and deadlines.
func (e *Engine) Tick(now time.Time) Ready {
	rd := Ready{Refuse: e.expireWaiters(now)}
	// Deadlines before slow flags: a call whose deadline and slow flag
	// come due in one Tick has timed out, and is judged as such (sample),
	// not flagged slow as well; seed 000's tick settles in that order.
	for e.dead.due(now) {
		e.expire(now, e.dead.pop(), &rd)
	}
	moved := false
	for e.slow.due(now) {
		moved = e.turnSlow(now, e.slow.pop(), &rd) || moved
	}
	for e.dropT.due(now) {
		q := e.dropT.pop()
		if !q.expired {
			moved = e.dropped(now, e.scopes[q.scope], q) || moved
		}
	}
	for _, sc := range e.scopes {
		if sc.ticker != nil {
			sc.ticker.Tick(now)
			moved = true
		}
		if sc.cfg.Breaker != nil {
			sc.cfg.Breaker.Tick(now)
		}
		if sc.cfg.Pool != nil {
			sc.cfg.Pool.Tick(now)
			moved = true // a replica drained or back moves the pool's limit
		}
	}
	for s := range e.scopes {
		e.poolEdge(now, s, &rd)
	}
	if moved {
		e.settle(now, &rd) // a trip moves its waiters before slots are handed out
		e.pump(now, &rd)
	}
	for e.hedgeT.due(now) {
		e.fireHedge(now, e.hedgeT.pop(), &rd)
	}
	for e.abandonT.due(now) {
		e.judgeReach(now, e.abandonT.pop(), &rd)
	}
	for e.hold.ends.due(now) {
		e.holdEnded(now, e.hold.ends.pop(), &rd)
	}
	e.settle(now, &rd)
	return rd
}

// dropAfter is the age past which q's call is too slow for its limit:
// the limit's own slow threshold, or else the breaker's.
func (e *Engine) dropAfter(sc *scope, q *request) time.Duration {
	if sc.cfg.SlowThreshold > 0 {
		return sc.cfg.SlowThreshold
	}
	if q.hasTicket {
		return q.ticket.SlowAfter()
	}
	return 0
}

// dropped tells q's limit that q, still in flight, is too slow.
func (e *Engine) dropped(now time.Time, sc *scope, q *request) bool {
	if q.dropped {
		return false
	}
	q.dropped = true
	sc.cfg.Limit.Update(limit.Sample{Now: now, Dropped: true, InFlight: e.inFlightAt(now, q.scope), QueueWait: q.started.Sub(q.arrived)})
	return true
}

// NextTimer is when the host should next call Tick, if anything is
// pending: a queue expiry, a call's slow flag, drop, deadline, hedge or
// reach judgement, a probe, a breaker's or pool's timer, or the end of a
// windowed limit's window that holds samples. The host arms this and
// nothing else, so every host ticks the engine at the same moments.
func (e *Engine) NextTimer() (time.Time, bool) {
	var next time.Time
	consider := func(at time.Time, ok bool) {
		if ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	consider(e.adm.NextExpiry())
	consider(e.slow.next())
	consider(e.dropT.next())
	consider(e.dead.next())
	consider(e.hedgeT.next())
	consider(e.abandonT.next())
	consider(e.hold.ends.next())
	consider(e.nextProbe())
	for _, sc := range e.scopes {
		if sc.cfg.Breaker != nil {
			consider(sc.cfg.Breaker.NextTimer())
		}
		if sc.cfg.Pool != nil {
			consider(sc.cfg.Pool.NextTimer())
		}
		if sc.ticker != nil {
			consider(sc.ticker.NextTick())
		}
	}
	return next, !next.IsZero()
}

// outVerdict is verdictDue for a scope whose breaker is out of rotation
// (asked first: the verdict's estimate reads the breaker's healthy p95,
// which it then keeps sorted).
func (e *Engine) outVerdict(now time.Time, s int) (time.Time, bool) {
	if e.scopes[s].cfg.Breaker.Weight(now) > 0 {
		return time.Time{}, false
	}
	return e.verdictDue(now, s)
}

// holds reports whether q is still the engine's request under its id.
func (e *Engine) holds(q *request) bool {
	p, ok := e.reqs.Get(q.id)
	return ok && p == q
}

// Snapshot reports admission's state, limits included.
func (e *Engine) Snapshot(now time.Time) admission.Snapshot { return e.adm.Snapshot(now) }

// ScopeLimit is a scope's current limit (0: unlimited; admission.None:
// no call for now, a fleet's replica that holds no part of it).
func (e *Engine) ScopeLimit(i int) int {
	if sc := e.scope(i); sc != nil {
		return sc.limiter.Limit()
	}
	return 0
}

// expire ends q at its deadline (Ready.Expire), unless it outlives it
// for a probe's verdict (outliveProbe).
func (e *Engine) expire(now time.Time, q *request, rd *Ready) {
	if e.outliveProbe(now, q, rd) {
		return
	}
	q.expired = true
	rd.Expire = append(rd.Expire, q.id)
}

// turnSlow flags q slow: its breaker hears of it, and a limit without a
// slow threshold of its own counts it as a drop. It reports whether the
// limit moved. A call ending at its deadline is not flagged: its Finish
// judges it.
func (e *Engine) turnSlow(now time.Time, q *request, rd *Ready) bool {
	if q.expired {
		return false
	}
	q.slow = true
	sc := e.scopes[q.scope]
	moved := false
	if sc.cfg.Limit != nil && sc.cfg.SlowThreshold == 0 {
		moved = e.dropped(now, sc, q)
	}
	if q.hasTicket {
		sc.cfg.Breaker.Slow(now, q.ticket)
	}
	e.onSlow(now, q, sc, rd)
	return moved
}
