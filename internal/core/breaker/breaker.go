package breaker

import (
	"slices"
	"time"

	"github.com/sluice-gw/sluice/internal/core/tickets"
)

// calmFraction: a fail-back step advances only while both window rates
// are below this fraction of their trip thresholds. The gap between calm
// and trip is the hysteresis that keeps a wobbling provider from being
// stepped up on the same evidence that would trip it.
const calmFraction = 0.5

// maxLog bounds the undrained transition log.
const maxLog = 256

// Breaker is one provider's breaker. See the package comment; it is not
// safe for concurrent use.
type Breaker struct {
	cfg  settings
	hist history
	lat  latencies

	started bool
	last    time.Time // latest now seen: time never runs backwards here
	// lastOff is last as an offset in nanoseconds from hist.origin: the
	// windows, the calls' starts and the probes' deadlines are integers
	// from it, so judging a call costs no time.Time arithmetic.
	lastOff int64

	state State
	step  int
	// gen changes at every entry to Open; outcomes of calls admitted in
	// an older generation are not counted (that period was judged).
	gen uint64

	openUntil time.Time
	openedFor time.Duration // length of the current or last Open
	failures  int           // consecutive failed recoveries: the backoff exponent

	halfOpenUntil time.Time
	probes        []uint64 // in-flight probes of this round
	probesOK      int
	lastProbe     time.Time // trickle mode: when the last probe was admitted

	// run counts the calls in a row that ended Error while Closed
	// (Config.ConsecutiveErrors).
	run int

	calmSince time.Time // Recovering: start of the current calm stretch
	stepCalls int       // Recovering: counted calls at this step

	// judged is what the last judgement while Closed looked at: nothing
	// counted since, the same bucket and the same threshold mean the same
	// evidence, and a breaker is asked on every call it routes.
	judged judgement

	nextID uint64
	calls  tickets.Table[uint64, inflight] // by value: no allocation per call

	// Fleet evidence (fleet.go): outbox holds this breaker's own counts
	// by absolute bucket until DrainEvidence, when sharing is on;
	// evidenceFrom is when the evidence it judges begins (its last trip or
	// reset), so another replica's older counts are not judged again.
	sharing      bool
	outbox       map[int64]counts
	evidenceFrom time.Time

	log                    []Transition
	dropped                int
	trips, reTrips, pfails int
}

// New returns a Closed breaker, or an error naming the invalid field.
func New(cfg Config) (*Breaker, error) {
	s, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	b := &Breaker{cfg: s, hist: newHistory(s.scaled(historyWidth))}
	b.lat.every, b.lat.memory = s.scaled(time.Minute), s.scaled(BaselineMemory)
	return b, nil
}

// advance takes the host's now, never letting time run backwards, and
// applies every transition due by it. A zero now is no time at all (a
// host asking before its clock has started): it neither starts the
// clock, which would put the window's origin in year 1 and every call
// in one bucket, nor moves it.
func (b *Breaker) advance(now time.Time) time.Time {
	switch {
	case now.IsZero():
		now = b.last
	case !b.started:
		b.started, b.last, b.hist.origin = true, now, now
	case now.Equal(b.last): // the same instant: lastOff holds
	case now.Before(b.last):
		now = b.last
	default:
		b.last, b.lastOff = now, int64(now.Sub(b.hist.origin))
	}
	b.fire(now)
	return now
}

// at is the time off nanoseconds after the history's origin.
func (b *Breaker) at(off int64) time.Time { return b.hist.origin.Add(time.Duration(off)) }

// fire applies what is due at now. No transition it makes is itself due
// at now, so one pass is enough.
func (b *Breaker) fire(now time.Time) {
	switch b.state {
	case Open:
		if !now.Before(b.openUntil) {
			b.record(now, HalfOpen, ReasonOpenElapsed, counts{})
			b.state, b.halfOpenUntil = HalfOpen, now.Add(b.cfg.HalfOpenMaxWait)
			b.lastProbe = time.Time{}
			b.probes, b.probesOK = b.probes[:0], 0
		}
	case HalfOpen:
		if b.cfg.ProbeInterval > 0 {
			b.expireTrickleProbes(now)
		}
		if at, ok := b.probeDeadline(); ok && !now.Before(at) && !at.After(b.halfOpenUntil) {
			b.trip(now, ReasonProbeTimeout, b.round(vSlow))
		} else if !b.cfg.Steady && !now.Before(b.halfOpenUntil) {
			b.trip(now, ReasonHalfOpenTimeout, b.round(vOK))
		}
	case Closed, Recovering:
		b.judge(now)
	}
}

type judgement struct {
	bucket    int64
	threshold time.Duration
	changes   uint64
}

// expireTrickleProbes frees the places of trickle probes past their
// timeout: each is a failed probe, flagged so its eventual Done is not
// counted again, and HalfOpen goes on.
func (b *Breaker) expireTrickleProbes(now time.Time) {
	b.probes = slices.DeleteFunc(b.probes, func(id uint64) bool {
		c, ok := b.calls.Get(id)
		if !ok || b.lastOff < c.deadline {
			return false
		}
		c.flagged = true
		b.calls.Put(id, c)
		b.pfails++
		return true
	})
}

// errorEvidence is what the error rate judges at the last now seen: the
// calls started within the last Window whose verdict is in. An error is
// known when the call ends, like a success, so recent starts bias
// neither way.
func (b *Breaker) errorEvidence() counts {
	return b.hist.sum(0, b.lastOff-int64(b.cfg.Window), b.lastOff)
}

// slowEvidence is what the slow rate judges: the calls started within a
// Window that ends a slow threshold ago. Every call started by then has
// its verdict (it answered, or was flagged slow as it passed the
// threshold), so the share is exact; a later start is known only if it
// answered fast, which would bias the share towards health.
func (b *Breaker) slowEvidence() counts {
	edge := b.lastOff - int64(b.SlowThreshold())
	return b.hist.sum(1, edge-int64(b.cfg.Window), edge)
}

// judge checks the evidence for a trip and, while Recovering, for a
// step. now is the last now seen (advance).
func (b *Breaker) judge(now time.Time) {
	j := judgement{b.hist.bucket(b.lastOff), b.SlowThreshold(), b.hist.changes}
	if b.state == Closed && j == b.judged {
		return // the same evidence as last time
	}
	b.judged = j
	e, sl := b.errorEvidence(), b.slowEvidence()
	if e.calls >= b.cfg.MinCalls && e.errorRate() >= b.cfg.ErrorRate {
		b.trip(now, ReasonErrorRate, e)
		return
	}
	if sl.calls >= b.cfg.MinCalls && sl.slowRate() >= b.cfg.SlowRate {
		b.trip(now, ReasonSlowRate, sl)
		return
	}
	if b.state != Recovering {
		return
	}
	if e.errorRate() >= calmFraction*b.cfg.ErrorRate || sl.slowRate() >= calmFraction*b.cfg.SlowRate {
		b.calmSince = now
		return
	}
	if b.stepCalls >= b.cfg.Probes && now.Sub(b.calmSince) >= b.cfg.StepHold {
		b.stepTo(now, b.step+1, ReasonStepUp, e)
	}
}

// stepTo moves to fail-back step i; the last step is Closed.
func (b *Breaker) stepTo(now time.Time, i int, r Reason, c counts) {
	b.step, b.calmSince, b.stepCalls = i, now, 0
	to := Recovering
	if i == len(b.cfg.Steps)-1 {
		to, b.failures = Closed, 0
		if r == ReasonStepUp {
			r = ReasonRecovered
		}
	}
	b.record(now, to, r, c)
	b.state = to
}

// trip opens the breaker.
func (b *Breaker) trip(now time.Time, r Reason, c counts) {
	switch {
	case b.state == Closed:
		b.trips, b.failures = b.trips+1, 0
	case b.state == Recovering:
		b.reTrips++
		b.failures++
	case r != ReasonHalfOpenTimeout:
		b.pfails++
		b.failures++
	}
	b.record(now, Open, r, c)
	b.state, b.gen, b.run = Open, b.gen+1, 0
	b.evidenceFrom = now
	b.openedFor = b.openFor()
	b.openUntil = now.Add(b.openedFor)
	b.probes, b.probesOK = b.probes[:0], 0
}

// openFor is OpenFor doubled per consecutive failed recovery, capped; a
// Steady breaker's is its probe interval, always.
func (b *Breaker) openFor() time.Duration {
	if b.cfg.Steady {
		return b.cfg.ProbeInterval
	}
	d := b.cfg.OpenFor
	for i := 0; i < b.failures && d < b.cfg.OpenForMax; i++ {
		d = min(d, b.cfg.OpenForMax/2) * 2
	}
	return min(d, b.cfg.OpenForMax)
}

// round is the half-open evidence: the probes that passed, plus the one
// that failed as v (vOK: none failed).
func (b *Breaker) round(v verdict) counts {
	c := counts{calls: b.probesOK}
	switch v {
	case vError:
		c.calls, c.errors = c.calls+1, 1
	case vSlow:
		c.calls, c.slow = c.calls+1, 1
	}
	return c
}

func (b *Breaker) probeDeadline() (time.Time, bool) {
	if len(b.probes) == 0 {
		return time.Time{}, false
	}
	first, _ := b.calls.Get(b.probes[0])
	at := first.deadline
	for _, id := range b.probes[1:] {
		c, _ := b.calls.Get(id)
		at = min(at, c.deadline)
	}
	return b.at(at), true
}

func (b *Breaker) record(now time.Time, to State, r Reason, c counts) {
	t := Transition{At: now, From: b.state, To: to, Reason: r, Step: -1,
		Calls: c.calls, ErrorRate: c.errorRate(), SlowRate: c.slowRate()}
	switch to {
	case Recovering:
		t.Step, t.Weight = b.step, b.cfg.Steps[b.step]
	case Closed:
		t.Step, t.Weight = len(b.cfg.Steps)-1, 1
	}
	if len(b.log) == maxLog {
		b.log = slices.Delete(b.log, 0, 1)
		b.dropped++
	}
	b.log = append(b.log, t)
}

// ErrorRun is how many calls in a row have ended Error while Closed:
// zero after an OK or slow call, a trip, or in any other state. A host
// asks it to tell one failure from a run of them (lifecycle's retry on
// the same target).
func (b *Breaker) ErrorRun() int { return b.run }

// Tick applies the transitions due by now: the end of Open, probe
// timeouts, HalfOpenMaxWait and fail-back steps. Call it at NextTimer.
func (b *Breaker) Tick(now time.Time) { b.advance(now) }

// NextTimer is when the next time-based transition falls due, if one is
// pending: the end of Open, the earliest probe timeout or
// HalfOpenMaxWait, or the end of the current step's hold once the step
// has its calls. A window trip needs no timer: it follows an outcome.
func (b *Breaker) NextTimer() (time.Time, bool) {
	switch b.state {
	case Open:
		return b.openUntil, true
	case HalfOpen:
		p, ok := b.probeDeadline()
		if b.cfg.Steady {
			return p, ok // only probe timeouts are due; HalfOpenMaxWait does not apply
		}
		at := b.halfOpenUntil
		if ok && p.Before(at) {
			at = p
		}
		return at, true
	case Recovering:
		if b.stepCalls >= b.cfg.Probes {
			return b.calmSince.Add(b.cfg.StepHold), true
		}
	}
	return time.Time{}, false
}

// State is the state at now and the fail-back step index: the current
// step while Recovering, the last step while Closed, -1 otherwise.
func (b *Breaker) State(now time.Time) (State, int) {
	b.advance(now)
	switch b.state {
	case Closed:
		return Closed, len(b.cfg.Steps) - 1
	case Recovering:
		return Recovering, b.step
	}
	return b.state, -1
}

// Weight is the share of new traffic the provider should get: 1 Closed,
// the step's share Recovering, 0 Open and HalfOpen (a router offers a
// HalfOpen provider calls only as probes, which Allow rations).
func (b *Breaker) Weight(now time.Time) float64 {
	switch s, i := b.State(now); s {
	case Closed, Recovering:
		return b.cfg.Steps[i]
	}
	return 0
}

// SlowThreshold is the threshold a call admitted now is judged by: the
// fixed Config.SlowThreshold, or the derived one.
func (b *Breaker) SlowThreshold() time.Duration {
	if b.cfg.SlowThreshold > 0 {
		return b.cfg.SlowThreshold
	}
	if b.lat.len() < min(b.cfg.MinCalls, HealthySamples) {
		return b.cfg.SlowDefault
	}
	return max(b.cfg.SlowFloor, time.Duration(float64(b.lat.baseline(b.last))*b.cfg.SlowHeadroom))
}

// HealthyP95 is the 95th percentile of the provider's recent healthy
// latencies (fast successes at full weight), and whether there are
// enough of them (MinCalls) to trust. A host can hedge after it.
func (b *Breaker) HealthyP95() (time.Duration, bool) {
	if b.lat.len() < min(b.cfg.MinCalls, HealthySamples) {
		return 0, false
	}
	return b.lat.p95(), true
}

// Transitions returns the transitions since the last call, oldest first,
// and forgets them: each is reported exactly once.
func (b *Breaker) Transitions() []Transition {
	out := b.log
	b.log = nil
	return out
}

// Stats is a snapshot at now.
func (b *Breaker) Stats(now time.Time) Stats {
	state, step := b.State(now)
	c, sl := b.errorEvidence(), b.slowEvidence()
	return Stats{
		State: state, Step: step, Weight: b.Weight(now),
		Calls: c.calls, Errors: c.errors, Slow: c.slow, RateLimited: c.limited,
		ErrorRate: c.errorRate(), SlowRate: sl.slowRate(),
		SlowThreshold: b.SlowThreshold(), HealthySamples: b.lat.len(),
		InFlight: b.calls.Len(), Probes: len(b.probes),
		Trips: b.trips, ReTrips: b.reTrips, ProbeFailures: b.pfails,
		OpenFor: b.openedFor, DroppedTransitions: b.dropped,
	}
}

// NextProbe is when a HalfOpen breaker will next grant a probe ticket,
// for a host that sends probes of its own rather than routing calls to
// it: at once while a slot is free, or, trickling, one ProbeInterval
// after the last probe. ok is false outside HalfOpen and while every
// probe slot is taken (a slot frees when a probe ends or times out,
// which NextTimer already names).
func (b *Breaker) NextProbe() (time.Time, bool) {
	if b.state != HalfOpen {
		return time.Time{}, false
	}
	if b.cfg.ProbeInterval > 0 {
		if b.probesFull() {
			return time.Time{}, false
		}
		if b.lastProbe.IsZero() {
			return b.last, true
		}
		return b.lastProbe.Add(b.cfg.ProbeInterval), true
	}
	if len(b.probes)+b.probesOK < b.cfg.Probes {
		return b.last, true
	}
	return time.Time{}, false
}

// probesFull: a trickling HalfOpen has Probes probes out. A Steady
// breaker's cadence alone bounds its probes (at most one probe timeout's
// worth of intervals are out at once), so a recovery is seen within one
// interval plus one call however slow the failing probes are.
func (b *Breaker) probesFull() bool {
	return !b.cfg.Steady && len(b.probes) >= b.cfg.Probes
}

// OpenForMax is the longest the breaker keeps its provider out of
// rotation at a time: a host bounds other waits on the provider (a
// Retry-After it sent) by it too.
func (b *Breaker) OpenForMax() time.Duration { return b.cfg.OpenForMax }

// Window is how much of the calls' start times the rates judge. A call
// flagged Slow later than Window after its SlowAfter has left the window
// its flag would count in, so a host that delays a flag (lifecycle's
// generation allowance) keeps the delay well inside it.
func (b *Breaker) Window() time.Duration { return b.cfg.Window }

// ProbeTimeout is how long a probe granted now may take before it counts
// as slow: Config.ProbeTimeout, or the slow threshold.
func (b *Breaker) ProbeTimeout() time.Duration {
	if b.cfg.ProbeTimeout > 0 {
		return b.cfg.ProbeTimeout
	}
	return b.SlowThreshold()
}
