package breaker

import (
	"slices"
	"time"
)

// inflight is an admitted call until its Done.
type inflight struct {
	start     int64 // an offset from the history's origin (Breaker.lastOff)
	wall      int64 // when it started, in Unix nanoseconds: only when sharing (export)
	gen       uint64
	slowAfter time.Duration
	deadline  int64 // probes only: start + ProbeTimeout, an offset like start
	probe     bool
	full      bool // admitted while Closed: its latency may teach the threshold
	flagged   bool // reported Slow while in flight: already counted
}

// verdict is what an outcome counts as.
type verdict uint8

const (
	vOK verdict = iota
	vError
	vSlow
	vLimited
	vIgnore
)

// Allow asks whether a call may go to the provider now. It refuses with
// ErrOpen while Open, and while HalfOpen once Probes probes are out.
// Every ticket it grants must be reported Done exactly once.
func (b *Breaker) Allow(now time.Time) (Ticket, error) {
	now = b.advance(now)
	probe := b.state == HalfOpen
	switch {
	case b.state == Open:
		return Ticket{}, ErrOpen
	case probe && b.cfg.ProbeInterval > 0:
		if b.probesFull() || (!b.lastProbe.IsZero() && now.Sub(b.lastProbe) < b.cfg.ProbeInterval) {
			return Ticket{}, ErrOpen
		}
		b.lastProbe = now
	case probe && len(b.probes)+b.probesOK >= b.cfg.Probes:
		return Ticket{}, ErrOpen
	}
	b.nextID++
	c := inflight{start: b.lastOff, gen: b.gen, slowAfter: b.SlowThreshold(), probe: probe, full: b.state == Closed}
	if b.sharing {
		c.wall = now.UnixNano()
	}
	t := Ticket{id: b.nextID, slowAfter: c.slowAfter, probe: probe}
	if probe {
		timeout := b.cfg.ProbeTimeout
		if timeout == 0 {
			timeout = c.slowAfter
		}
		c.deadline = c.start + int64(timeout)
		t.deadline = now.Add(timeout)
		b.probes = append(b.probes, b.nextID)
	}
	b.calls.Put(b.nextID, c)
	return t, nil
}

// Slow reports that a call is still in flight past its SlowAfter. It
// counts as slow now, and its Done will not count it again. It reports
// false for an unknown ticket or one already flagged.
func (b *Breaker) Slow(now time.Time, t Ticket) bool {
	now = b.advance(now)
	c, ok := b.calls.Get(t.id)
	if !ok || c.flagged {
		return false
	}
	c.flagged = true
	b.calls.Put(t.id, c)
	if c.gen == b.gen {
		b.count(now, &c, vSlow, 0)
	}
	return true
}

// Done reports how a call ended. A call already flagged Slow counts
// once, as slow, whatever its outcome. Otherwise Error counts as an
// error (even if slow), OK as slow if Latency > SlowAfter + Allowance
// and as a success if not, TimedOut as slow if Latency >= SlowAfter +
// Allowance (or it was a probe) and not at all if not, and RateLimited and Cancelled not at
// all. Done reports
// false for an unknown ticket (a second Done changes nothing).
func (b *Breaker) Done(now time.Time, t Ticket, o Outcome) bool {
	now = b.advance(now)
	c, ok := b.calls.Get(t.id)
	if !ok {
		return false
	}
	b.calls.Delete(t.id)
	current := c.gen == b.gen
	if i := slices.Index(b.probes, t.id); i >= 0 {
		b.probes = slices.Delete(b.probes, i, i+1)
	}
	if c.flagged || !current {
		return true
	}
	lat := o.Latency
	if lat <= 0 {
		lat = time.Duration(b.lastOff - c.start)
	}
	v := vIgnore
	switch o.Kind {
	case OK:
		v = vOK
		if lat > c.slowAfter+max(o.Allowance, 0) {
			v = vSlow
		}
	case Error:
		v = vError
	case RateLimited:
		v = vLimited
	case TimedOut:
		if c.probe || lat >= c.slowAfter+max(o.Allowance, 0) {
			v = vSlow
		}
	}
	b.count(now, &c, v, lat)
	return true
}

// count applies one current-generation verdict.
func (b *Breaker) count(now time.Time, c *inflight, v verdict, lat time.Duration) {
	if c.probe && b.state != HalfOpen {
		// A trickle probe answering after another one already passed:
		// fail-back has started, and must not restart from its first step.
		return
	}
	if c.probe && b.cfg.ProbeInterval > 0 {
		switch v {
		case vOK: // one fast answer is enough to start the cautious steps
			b.hist.reset()
			b.evidenceFrom = now
			b.stepTo(now, 0, ReasonProbesOK, b.round(vOK))
		case vError, vSlow:
			b.pfails++ // a trickle probe's failure only frees its place
		}
		return
	}
	if c.probe {
		switch v {
		case vOK:
			if b.probesOK++; b.probesOK >= b.cfg.Probes {
				b.hist.reset()
				b.evidenceFrom = now
				b.stepTo(now, 0, ReasonProbesOK, b.round(vOK))
			}
		case vError:
			b.trip(now, ReasonProbeError, b.round(v))
		case vSlow:
			b.trip(now, ReasonProbeSlow, b.round(v))
		}
		// vLimited, vIgnore: Done already freed the slot for another
		// probe; HalfOpenMaxWait bounds how long that can go on.
		return
	}
	var d counts
	switch v {
	case vOK:
		d.calls = 1
		if c.full && b.state == Closed { // at full weight throughout
			if b.cfg.SlowThreshold == 0 { // marks serve the derived threshold alone
				b.lat.mark(now, min(b.cfg.MinCalls, HealthySamples))
			}
			b.lat.add(lat)
		}
	case vError:
		d.calls, d.errors = 1, 1
	case vSlow:
		d.calls, d.slow = 1, 1
	case vLimited:
		d.limited = 1
	default:
		return
	}
	b.hist.addAt(b.hist.bucket(c.start), d)
	if b.sharing && c.wall == 0 { // started before ShareEvidence
		c.wall = b.at(c.start).UnixNano()
	}
	b.export(c.wall, d)
	b.stepCalls += d.calls
	if b.countRun(now, v) {
		return
	}
	b.judge(now)
}

// countRun follows the run of errors in a row while Closed, and trips
// the breaker when it reaches ConsecutiveErrors: a provider down hard
// at one request every few seconds never fills the window's MinCalls,
// but every one of its calls fails. An OK or slow call ends the run.
func (b *Breaker) countRun(now time.Time, v verdict) bool {
	if b.state != Closed {
		b.run = 0
		return false
	}
	switch v {
	case vError:
		b.run++
	case vOK, vSlow:
		b.run = 0
	}
	if n := b.cfg.ConsecutiveErrors; n > 0 && b.run >= n {
		b.trip(now, ReasonConsecutiveErrors, counts{calls: b.run, errors: b.run})
		return true
	}
	return false
}
