package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/admission"
	"github.com/sluice-gw/sluice/limit"
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
	// SlowThreshold flags a call as a drop the moment it is this old
	// while still in flight. Zero disables the in-flight check.
	SlowThreshold time.Duration
}

// Config configures an Engine. Admission.Scopes is ignored: the engine
// builds it from Scopes.
type Config struct {
	Admission admission.Config
	Scopes    []ScopeConfig
}

// Request is what the engine needs to know about a request.
type Request struct {
	Priority admission.Priority
	// Scope indexes Config.Scopes, or admission.NoScope.
	Scope  int
	Stream bool
	// Deadline is when the request's time runs out; zero means never.
	Deadline time.Time
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

// Outcome is how a call ended.
type Outcome struct {
	Kind OutcomeKind
	// OutputTokens, when known, lets the TPOT signal divide generation
	// time by tokens.
	OutputTokens int
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
}

func (r *Ready) merge(o Ready) {
	r.Start = append(r.Start, o.Start...)
	r.Refuse = append(r.Refuse, o.Refuse...)
	r.Expire = append(r.Expire, o.Expire...)
}

// Arrival is Arrive's verdict on the arriving request itself.
type Arrival struct {
	ID      ID
	Verdict admission.Verdict
	// Refusal is set when Verdict is admission.Rejected.
	Refusal admission.Refusal
}

type scope struct {
	cfg     ScopeConfig
	limiter admission.Limiter
}

// ticker is a limit that closes windows on the clock, not only on samples.
type ticker interface{ Tick(now time.Time) }

// algLimiter lets admission read an algorithm's current limit.
type algLimiter struct{ alg limit.Algorithm }

func (l algLimiter) Limit() int { return l.alg.Limit() }

type request struct {
	id        ID
	req       Request
	arrived   time.Time
	started   time.Time // zero while waiting
	firstByte time.Time
	flagged   bool // reported slow while in flight
	// timers holds, per timer kind (slowTimer, deadTimer), when it fires
	// and the request's index in that kind's heap (-1: not armed).
	timerAt  [2]time.Time
	timerIdx [2]int
}

// Engine is the lifecycle state machine. See the package comment.
type Engine struct {
	adm    *admission.Core
	scopes []*scope
	reqs   map[ID]*request
	slow   timerHeap // in-flight requests by slowAt
	dead   timerHeap // in-flight requests by deadline
	// periodic is set when a limit needs Tick even without traffic.
	periodic bool
}

// New builds an Engine.
func New(cfg Config) *Engine {
	e := &Engine{reqs: make(map[ID]*request)}
	e.slow.kind, e.dead.kind = slowTimer, deadTimer
	limiters := make([]admission.Limiter, len(cfg.Scopes))
	for i, sc := range cfg.Scopes {
		s := &scope{cfg: sc, limiter: admission.Fixed(sc.Fixed)}
		if sc.Limit != nil {
			s.limiter = algLimiter{sc.Limit}
			if _, ok := sc.Limit.(ticker); ok {
				e.periodic = true
			}
		}
		limiters[i] = s.limiter
		e.scopes = append(e.scopes, s)
	}
	ac := cfg.Admission
	ac.Scopes = limiters
	e.adm = admission.NewCore(ac)
	return e
}

// Check reports whether a request would be refused at once, without
// changing anything: the host asks it from the headers alone.
func (e *Engine) Check(now time.Time, r Request) (admission.Refusal, bool) {
	return e.adm.Check(now, admission.Request{Priority: r.Priority, Scope: r.Scope, Deadline: r.Deadline})
}

// Arrive admits, queues or refuses a new request. Ready carries waiters
// that this arrival displaced.
func (e *Engine) Arrive(now time.Time, r Request) (Arrival, Ready) {
	res := e.adm.Admit(now, admission.Request{Priority: r.Priority, Scope: r.Scope, Deadline: r.Deadline})
	var rd Ready
	rd.Refuse = res.Displaced
	for _, f := range res.Displaced {
		delete(e.reqs, f.Ticket)
	}
	a := Arrival{ID: res.Ticket, Verdict: res.Verdict, Refusal: res.Refusal}
	if res.Verdict == admission.Rejected {
		return a, rd
	}
	q := &request{id: res.Ticket, req: r, arrived: now, timerIdx: [2]int{-1, -1}}
	e.reqs[q.id] = q
	if res.Verdict == admission.Admitted {
		e.start(now, q)
	}
	return a, rd
}

// start moves a request into flight and arms its timers.
func (e *Engine) start(now time.Time, q *request) {
	q.started = now
	if sc := e.scope(q.req.Scope); sc != nil && sc.cfg.SlowThreshold > 0 {
		// Slow means past the threshold, not at it.
		e.slow.push(q, now.Add(sc.cfg.SlowThreshold+time.Nanosecond))
	}
	if !q.req.Deadline.IsZero() {
		e.dead.push(q, q.req.Deadline)
	}
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
	q, ok := e.reqs[id]
	if !ok || q.started.IsZero() || !q.firstByte.IsZero() {
		return
	}
	q.firstByte = now
	if sc := e.scope(q.req.Scope); sc != nil && q.timerIdx[slowTimer] >= 0 && e.signal(sc, q) == TTFT {
		e.slow.remove(q)
	}
}

// Leave withdraws a waiting request whose client went away. It reports
// false if the request is not waiting; an in-flight request ends with
// Finish(Cancelled) instead.
func (e *Engine) Leave(now time.Time, id ID) bool {
	if !e.adm.Leave(now, id) {
		return false
	}
	delete(e.reqs, id)
	return true
}

// Finish ends an in-flight request: its slot is released, its outcome
// becomes a limit sample, and waiters that now fit are started. ok is
// false if id was not in flight (a second Finish changes nothing).
func (e *Engine) Finish(now time.Time, id ID, o Outcome) (rd Ready, ok bool) {
	q, found := e.reqs[id]
	if !found || q.started.IsZero() {
		return rd, false
	}
	sc := e.scope(q.req.Scope)
	if sc != nil && sc.cfg.Limit != nil && !q.flagged {
		if s, use := e.sample(now, sc, q, o); use {
			sc.cfg.Limit.Update(s)
		}
	}
	e.slow.remove(q)
	e.dead.remove(q)
	delete(e.reqs, id)
	// The host's Tick for a waiter whose time ran out may not have come
	// yet (in the Runner, the timer and this Finish race for the lock).
	// Started, that waiter would spend an upstream call it has no time
	// for, and its TimedOut would reach the limit as a false drop.
	rd.Refuse = e.expireWaiters(now)
	granted, _ := e.adm.Release(now, id)
	rd.Start = e.started(now, granted)
	return rd, true
}

// expireWaiters refuses the waiters whose wait has run out by now.
func (e *Engine) expireWaiters(now time.Time) []admission.Refusal {
	out := e.adm.Expire(now)
	for _, f := range out {
		delete(e.reqs, f.Ticket)
	}
	return out
}

// sample turns an outcome into a limit sample, or reports that it is not
// one.
func (e *Engine) sample(now time.Time, sc *scope, q *request, o Outcome) (limit.Sample, bool) {
	s := limit.Sample{Now: now, InFlight: e.adm.InFlight(q.req.Scope), QueueWait: q.started.Sub(q.arrived)}
	switch o.Kind {
	case Overloaded, TimedOut, ConnError:
		s.Dropped = true
		return s, true
	case OK:
	default:
		return s, false
	}
	total := now.Sub(q.started)
	switch e.signal(sc, q) {
	case TTFT:
		s.Latency = total
		if !q.firstByte.IsZero() {
			s.Latency = q.firstByte.Sub(q.started)
		}
	case TPOT:
		s.Latency = total
		if !q.firstByte.IsZero() && o.OutputTokens > 1 {
			s.Latency = now.Sub(q.firstByte) / time.Duration(o.OutputTokens-1)
		}
	default:
		s.Latency = total
	}
	return s, true
}

// started arms the timers of requests admission just granted.
func (e *Engine) started(now time.Time, ids []ID) []ID {
	for _, id := range ids {
		if q, ok := e.reqs[id]; ok {
			e.start(now, q)
		}
	}
	return ids
}

// Tick fires every timer due by now: queue expiries, slow flags (which
// may move limits and so start waiters) and deadlines.
func (e *Engine) Tick(now time.Time) Ready {
	rd := Ready{Refuse: e.expireWaiters(now)}
	moved := false
	for e.slow.due(now) {
		q := e.slow.pop()
		q.flagged = true
		if sc := e.scope(q.req.Scope); sc != nil && sc.cfg.Limit != nil {
			sc.cfg.Limit.Update(limit.Sample{Now: now, Dropped: true, InFlight: e.adm.InFlight(q.req.Scope), QueueWait: q.started.Sub(q.arrived)})
			moved = true
		}
	}
	for _, sc := range e.scopes {
		if t, ok := sc.cfg.Limit.(ticker); ok {
			t.Tick(now)
			moved = true
		}
	}
	if moved {
		rd.Start = e.started(now, e.adm.Pump(now))
	}
	for e.dead.due(now) {
		rd.Expire = append(rd.Expire, e.dead.pop().id)
	}
	return rd
}

// NextTimer is when the host should next call Tick, if anything is
// pending. Windowed limits that want periodic ticks get them from the
// host's own cadence (Runner ticks at least once a second).
func (e *Engine) NextTimer() (time.Time, bool) {
	var next time.Time
	for _, t := range []func() (time.Time, bool){e.adm.NextExpiry, e.slow.next, e.dead.next} {
		if at, ok := t(); ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, !next.IsZero()
}

// Snapshot reports admission's state, limits included.
func (e *Engine) Snapshot(now time.Time) admission.Snapshot { return e.adm.Snapshot(now) }

// ScopeLimit is a scope's current limit (0: unlimited).
func (e *Engine) ScopeLimit(i int) int {
	if sc := e.scope(i); sc != nil {
		return sc.limiter.Limit()
	}
	return 0
}
