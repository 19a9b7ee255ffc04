package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// Synthetic probes: a half-open breaker learns whether its provider has
// recovered from probe calls. Routed user requests make those probes
// when another target can rescue them; a provider that is a model's only
// target has nothing to rescue a probe with, so a user whose request
// became a probe would wait out the probe's timeout and fail. With
// ScopeConfig.SyntheticProbes the engine asks the host to send probes of
// its own instead (Ready.Probe: a smallest request, one output token),
// and routes no user request to the scope until one passes; users wait
// meanwhile for a probe's verdict when it is due within their patience,
// and are refused with a Retry-After naming the next verdict otherwise
// or when it fails (hold.go). Probes keep going without user traffic, so
// a recovery is noticed even when clients have stopped asking.
//
// A probe's latency is its whole call, which for a one-token answer is
// its time to first token, judged by the breaker's slow threshold.

// ProbeID names a synthetic probe from Ready.Probe until FinishProbe.
type ProbeID uint64

// ProbeStart asks the host to send a synthetic probe to a scope's
// provider and give up on it at Deadline.
type ProbeStart struct {
	ID       ProbeID
	Scope    int
	Deadline time.Time
}

// probeRetryGap is the least wait before a synthetic probe replaces one
// that proved nothing (a 429, a cancel): the breaker frees such a probe's
// slot at once, and a provider pacing us would otherwise be probed back
// to back.
const probeRetryGap = time.Second

type probeCall struct {
	scope   int
	ticket  breaker.Ticket
	started time.Time
}

// sendProbes takes every probe ticket the synthetic scopes' half-open
// breakers will grant now.
func (e *Engine) sendProbes(now time.Time, rd *Ready) {
	for i, sc := range e.scopes {
		if !sc.cfg.SyntheticProbes || sc.cfg.Breaker == nil {
			continue
		}
		b := sc.cfg.Breaker
		if st, _ := b.State(now); st != breaker.HalfOpen || now.Before(e.probeWait[i]) {
			continue
		}
		for {
			t, err := b.Allow(now)
			if err != nil {
				break
			}
			e.lastProbe++
			e.probes[e.lastProbe] = &probeCall{scope: i, ticket: t, started: now}
			rd.Probe = append(rd.Probe, ProbeStart{ID: e.lastProbe, Scope: i, Deadline: t.ProbeDeadline()})
		}
	}
}

// FinishProbe reports how a synthetic probe ended. A fast answer starts
// the provider's fail-back; an error, a slow answer or a timeout keeps
// it out of rotation. ok is false for an unknown probe.
func (e *Engine) FinishProbe(now time.Time, id ProbeID, o Outcome) (rd Ready, ok bool) {
	p, found := e.probes[id]
	if !found {
		return rd, false
	}
	delete(e.probes, id)
	b := e.scopes[p.scope].cfg.Breaker
	bo := breakerOutcome(Total, p.started, time.Time{}, now, o, false)
	if bo.Kind == breaker.RateLimited || bo.Kind == breaker.Cancelled {
		// The provider's own wait, bounded like any Retry-After it sends
		// (pause.go): one answer must not take it out of rotation for a day.
		e.probeWait[p.scope] = now.Add(e.BoundRetryAfter(p.scope, max(o.RetryAfter, e.scaled(probeRetryGap))))
	}
	if bo.Kind == breaker.OK && bo.Latency <= b.ProbeTimeout() {
		e.probePassed(p.scope, bo.Latency) // how long a passing probe takes (hold.go)
	}
	b.Done(now, p.ticket, bo)
	e.settle(now, &rd)
	if bo.Kind != breaker.Cancelled && e.holding[p.scope] {
		// Still out of rotation: whoever waited through this probe has
		// its verdict (hold.go).
		e.refuseHeld(now, p.scope, p.started, &rd)
	}
	return rd, true
}

// nextProbe is when a synthetic scope's breaker will next grant a probe.
func (e *Engine) nextProbe() (time.Time, bool) {
	var next time.Time
	for i, sc := range e.scopes {
		if sc.cfg.SyntheticProbes && sc.cfg.Breaker != nil {
			at, ok := sc.cfg.Breaker.NextProbe()
			if at.Before(e.probeWait[i]) {
				at = e.probeWait[i]
			}
			if ok && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	return next, !next.IsZero()
}

// ProbesSent counts the synthetic probes the engine has asked for.
func (e *Engine) ProbesSent() uint64 { return uint64(e.lastProbe) }
