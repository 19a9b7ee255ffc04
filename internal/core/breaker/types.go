package breaker

import (
	"errors"
	"time"
)

// ErrOpen is Allow's refusal: the breaker is Open, or HalfOpen with every
// probe slot in use. A host may return it to its router as "try another
// provider".
var ErrOpen = errors.New("breaker: open")

// State is where the breaker is in its cycle. See the package comment.
type State uint8

const (
	// Closed: the provider takes its full share (Weight 1).
	Closed State = iota
	// Open: the provider takes nothing (Weight 0) until its open time
	// ends.
	Open
	// HalfOpen: the provider takes only probe calls, which Allow admits
	// up to Config.Probes at once (Weight 0).
	HalfOpen
	// Recovering: the probes passed; the provider takes the current
	// fail-back step's share of traffic (0 < Weight < 1).
	Recovering
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	case Recovering:
		return "recovering"
	}
	return "unknown"
}

// Kind classifies how a call ended.
type Kind uint8

const (
	// OK: the provider answered (any 2xx). It is slow if its Latency is
	// over the ticket's SlowAfter.
	OK Kind = iota
	// Error: a 5xx (529 included) or a connection error.
	Error
	// RateLimited: a 429. It says the provider is limiting this client,
	// not that it is sick, so it is not a call for either rate: it
	// neither raises the error rate nor dilutes it (see the package
	// comment).
	RateLimited
	// Cancelled: the client went away, or the call lost a hedge. It says
	// nothing about the provider and is not counted.
	Cancelled
	// TimedOut: the host gave up on the call at its deadline, Latency
	// after it started. Past the ticket's SlowAfter it is slow; short of
	// it, the deadline was the client's own choice and says nothing
	// about the provider, so one client asking for a millisecond cannot
	// trip the breaker for everyone. A probe that times out always
	// counts as slow: its deadline is the breaker's.
	TimedOut
)

// Outcome is how a call ended.
type Outcome struct {
	Kind Kind
	// Latency is the host's latency signal for the call (time to first
	// token for streams, end-to-end time otherwise: the same signal for
	// every call of one breaker). Zero means "now minus the Allow time".
	Latency time.Duration
	// Allowance is the time the call spent generating the output it
	// produced, at the slowest rate a healthy provider generates (for an
	// end-to-end latency: a whole answer's length is the client's
	// choice, not the provider's health). An OK or timed-out call is slow
	// only past SlowAfter plus Allowance. The latency, not less the
	// allowance, is what a healthy call teaches the derived threshold.
	Allowance time.Duration
}

// Reason says why a transition happened; it is meant for logs and
// metric labels.
type Reason string

const (
	// ReasonErrorRate: the window's error rate reached Config.ErrorRate.
	ReasonErrorRate Reason = "error_rate"
	// ReasonConsecutiveErrors: Config.ConsecutiveErrors calls in a row
	// ended in Error while Closed.
	ReasonConsecutiveErrors Reason = "consecutive_errors"
	// ReasonSlowRate: the window's slow rate reached Config.SlowRate.
	ReasonSlowRate Reason = "slow_rate"
	// ReasonOpenElapsed: the open time ended; probing starts.
	ReasonOpenElapsed Reason = "open_elapsed"
	// ReasonProbeError: a probe ended in Error.
	ReasonProbeError Reason = "probe_error"
	// ReasonProbeSlow: a probe was reported Slow, or ended OK but slow.
	ReasonProbeSlow Reason = "probe_slow"
	// ReasonProbeTimeout: a probe was still in flight at ProbeTimeout.
	ReasonProbeTimeout Reason = "probe_timeout"
	// ReasonHalfOpenTimeout: HalfOpen had no verdict by HalfOpenMaxWait
	// (typically: too little traffic to complete the probes).
	ReasonHalfOpenTimeout Reason = "half_open_timeout"
	// ReasonProbesOK: every probe succeeded fast; fail-back starts.
	ReasonProbesOK Reason = "probes_ok"
	// ReasonStepUp: the provider stayed calm for a whole StepHold; it
	// moves to the next fail-back step.
	ReasonStepUp Reason = "step_up"
	// ReasonRecovered: the last step was reached; the breaker is Closed.
	ReasonRecovered Reason = "recovered"
)

// Transition is one change of state (or of fail-back step), reported
// once through Breaker.Transitions.
type Transition struct {
	At       time.Time
	From, To State
	Reason   Reason
	// Step is the fail-back step index after the transition (see
	// Breaker.State); Weight is the share of traffic after it.
	Step   int
	Weight float64
	// Calls, ErrorRate and SlowRate are the evidence: the window for
	// rate trips and steps, the probe round for probe verdicts.
	Calls     int
	ErrorRate float64
	SlowRate  float64
}

// Stats is a snapshot for metrics.
type Stats struct {
	State  State
	Step   int
	Weight float64
	// The window's counters. RateLimited calls are not part of Calls.
	Calls, Errors, Slow, RateLimited int
	ErrorRate, SlowRate              float64
	// SlowThreshold is what a call admitted now would be judged by;
	// HealthySamples is how many latencies the derived threshold rests
	// on (at most HealthySamples).
	SlowThreshold  time.Duration
	HealthySamples int
	// InFlight counts tickets not yet Done; Probes the probe tickets
	// among them that still count for the current half-open round.
	InFlight, Probes int
	// Trips counts Closed→Open, ReTrips Recovering→Open, ProbeFailures
	// HalfOpen→Open on a bad probe (not on HalfOpenMaxWait).
	Trips, ReTrips, ProbeFailures int
	// OpenFor is how long the current (or last) Open lasts, backoff
	// included; 0 before the first trip.
	OpenFor time.Duration
	// DroppedTransitions counts transitions discarded because the host
	// let more than maxLog pile up undrained.
	DroppedTransitions int
}

// Ticket names one admitted call from Allow to Done. The zero Ticket is
// never issued.
type Ticket struct {
	id        uint64
	slowAfter time.Duration
	probe     bool
	deadline  time.Time
}

// Probe reports whether the call is a half-open probe.
func (t Ticket) Probe() bool { return t.probe }

// ProbeDeadline is when a probe's own timeout ends it (zero for a call
// that is not a probe). A host should give up on the call then: a probe
// answers a question about the provider, and a user should not wait out
// the whole request deadline for it.
func (t Ticket) ProbeDeadline() time.Time { return t.deadline }

// SlowAfter is the slow threshold this call is judged by: the host arms
// a timer for the call's start plus SlowAfter and calls Slow when it
// fires with the call still in flight (for a time-to-first-token signal:
// with no first byte yet).
func (t Ticket) SlowAfter() time.Duration { return t.slowAfter }
