package evals

import (
	"math/rand/v2"
	"time"
)

// Options configure a Core.
type Options struct {
	Sets []*Set
	// MaxInFlight bounds the eval calls running at once (default 2).
	MaxInFlight int
	// CallsPerMinute bounds the eval calls started per minute (default
	// 60), as a bucket that holds a minute's calls.
	CallsPerMinute int
	// Seed owns the jitter. A gateway seeds it at random so replicas do
	// not run in step; the simulator from its scenario.
	Seed uint64
}

// Call is one eval call the host must make: a set's case against one
// of its targets. The host reports it with Done.
type Call struct {
	ID     CallID
	Set    *Set
	Target int // index into Set.Targets
	Case   int // index into Set.Cases
}

// CallID names a call from Due until Done.
type CallID uint64

// Result is how an eval call ended.
type Result struct {
	// Answered: the target gave an answer to judge (a 2xx with text).
	// Otherwise Reason says what went wrong (a status, a timeout) and
	// the call is not counted in the pass rate.
	Answered bool
	// Reason is "" for an answer that passed its check, and why not
	// otherwise. It must hold no secret: hosts build it from statuses
	// and the (scrubbed) answer.
	Reason string
	// Latency is how long the call took.
	Latency time.Duration
}

// Pass reports whether r is an answer that passed.
func (r Result) Pass() bool { return r.Answered && r.Reason == "" }

// Transition is a target entering or leaving the degraded state, each
// reported once.
type Transition struct {
	Model    string
	Target   int
	Provider string
	Upstream string
	Degraded bool
	// PassRate and Judged are the figures that decided it.
	PassRate float64
	Judged   int
}

// Core schedules the eval calls and keeps their results: the pure half
// of the evals, in the style of lifecycle.Engine. It is not safe for
// concurrent use, never reads the clock (every method takes now), never
// sleeps and starts no goroutine; Runner is its concurrent shell, and
// the simulator steps it directly.
type Core struct {
	targets  []*targetState // every set's targets, sets in order
	pending  []Call         // calls of due runs, waiting for room
	inFlight map[CallID]inFlight
	lastID   CallID
	maxIn    int
	// The call bucket: tokens, refilled at perMinute a minute up to
	// perMinute, as of bucketAt.
	tokens    float64
	perMinute float64
	bucketAt  time.Time
	rng       *rand.Rand
	trans     []Transition
}

// NewCore builds a Core whose targets each run first at a random point
// of the first tenth of their interval from now.
func NewCore(o Options, now time.Time) *Core {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 2
	}
	if o.CallsPerMinute <= 0 {
		o.CallsPerMinute = 60
	}
	c := &Core{inFlight: map[CallID]inFlight{}, maxIn: o.MaxInFlight, perMinute: float64(o.CallsPerMinute),
		tokens: float64(o.CallsPerMinute), bucketAt: now, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0xe7a1))}
	for _, s := range o.Sets {
		for i := range s.Targets {
			t := &targetState{set: s, idx: i}
			t.due = now.Add(c.jitter(0, s.Interval/10))
			c.targets = append(c.targets, t)
		}
	}
	return c
}

// jitter draws a duration in [lo, hi).
func (c *Core) jitter(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(c.rng.Int64N(int64(hi-lo)))
}

// refill brings the call bucket up to now.
func (c *Core) refill(now time.Time) {
	if now.After(c.bucketAt) {
		c.tokens = min(c.perMinute, c.tokens+now.Sub(c.bucketAt).Minutes()*c.perMinute)
		c.bucketAt = now
	}
}

// Due starts the runs that are due at now and returns the calls the
// host should make now, within the in-flight and per-minute bounds. A
// target whose last run is still going skips a due run.
func (c *Core) Due(now time.Time) []Call {
	for _, t := range c.targets {
		if now.Before(t.due) {
			continue
		}
		if t.running == 0 {
			t.startRun(now)
			for k := range t.set.Cases {
				c.lastID++
				c.pending = append(c.pending, Call{ID: c.lastID, Set: t.set, Target: t.idx, Case: k})
				c.inFlight[c.lastID] = inFlight{t, k}
				t.running++
			}
		}
		iv := t.set.Interval
		for !now.Before(t.due) {
			t.due = t.due.Add(c.jitter(iv-iv/10, iv+iv/10+1))
		}
	}
	c.refill(now)
	var out []Call
	for n := c.started(); len(c.pending) > 0 && n < c.maxIn && c.tokens >= 1; n++ {
		call := c.pending[0]
		out = append(out, call)
		c.pending = c.pending[1:]
		c.tokens--
		c.inFlight[call.ID].t.started++
	}
	return out
}

// started counts the calls handed out and not yet done.
func (c *Core) started() int {
	n := 0
	for _, t := range c.targets {
		n += t.started
	}
	return n
}

// Done records a call's result, and returns the transitions it caused:
// a run is judged when its last call is done.
func (c *Core) Done(now time.Time, id CallID, r Result) []Transition {
	f, ok := c.inFlight[id]
	if !ok {
		return nil
	}
	delete(c.inFlight, id)
	t := f.t
	t.started--
	t.running--
	t.record(now, t.set.Cases[f.cs].Name, r)
	if t.running == 0 {
		if tr, ok := t.finishRun(now); ok {
			return []Transition{tr}
		}
	}
	return nil
}

// inFlight is a call handed out: its target and case.
type inFlight struct {
	t  *targetState
	cs int
}

// Calls counts a target's calls that have ended, by result.
type Calls struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Error int `json:"error"`
}

// NextTimer is when Due has something to do next: a run coming due, or
// room in the call bucket for a waiting call.
func (c *Core) NextTimer() (time.Time, bool) {
	var at time.Time
	consider := func(t time.Time) {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	for _, t := range c.targets {
		if t.running == 0 {
			consider(t.due) // a busy target skips its turn; Done wakes the host
		}
	}
	if len(c.pending) > 0 && c.started() < c.maxIn && c.tokens < 1 {
		need := (1 - c.tokens) / c.perMinute * float64(time.Minute)
		consider(c.bucketAt.Add(time.Duration(need) + time.Nanosecond))
	}
	return at, !at.IsZero()
}

// Degraded reports whether a set's target is degraded now.
func (c *Core) Degraded(model string, target int) bool {
	for _, t := range c.targets {
		if t.set.Model == model && t.idx == target {
			return t.degraded
		}
	}
	return false
}
