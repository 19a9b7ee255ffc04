package breaker

import (
	"slices"
	"time"
)

// ReasonFleet: another replica of the fleet reached this verdict, and
// this breaker adopted it (Adopt).
const ReasonFleet Reason = "fleet"

// Adopt makes the breaker follow a verdict another replica of its fleet
// reached on the same provider, so that the fleet makes one decision
// instead of each replica judging a third of the calls and flapping on
// its own: to Open (that replica tripped), or to Recovering at step, or
// Closed (the fleet's prober's probes passed, or it stepped up). It
// never moves the breaker backwards along the way out: an Open verdict
// trips a Closed or Recovering breaker (already out, it stays as it is),
// and a recovery verdict lifts an Open or HalfOpen breaker, or steps a
// Recovering one up, never down.
func (b *Breaker) Adopt(now time.Time, to State, step int) {
	now = b.advance(now)
	last := len(b.cfg.Steps) - 1
	switch to {
	case Open:
		if b.state == Closed || b.state == Recovering {
			b.trip(now, ReasonFleet, counts{})
		}
	case Recovering, Closed:
		if to == Closed {
			step = last
		}
		step = min(max(step, 0), last)
		switch b.state {
		case Open, HalfOpen:
			b.probes, b.probesOK = b.probes[:0], 0
			b.hist.reset()
			b.evidenceFrom = now
			b.stepTo(now, step, ReasonFleet, counts{})
		case Recovering:
			if step > b.step {
				b.stepTo(now, step, ReasonFleet, counts{})
			}
		}
	}
}

// Evidence is calls counted in one stretch of start times (a bucket of
// the breaker's history), as one replica saw them: the unit the fleet's
// replicas exchange so that each judges every replica's calls, not a
// third of them.
type Evidence struct {
	// Start is when the bucket begins; the bucket is historyWidth long
	// (times Config.TimeScale: replicas share evidence at one scale).
	Start time.Time `json:"t"`
	// Calls counted, and of them errors and slow; Limited are 429s.
	Calls   int `json:"n"`
	Errors  int `json:"e,omitempty"`
	Slow    int `json:"s,omitempty"`
	Limited int `json:"l,omitempty"`
}

// ShareEvidence makes the breaker keep its own counts for DrainEvidence.
func (b *Breaker) ShareEvidence() {
	b.sharing = true
	if b.outbox == nil {
		b.outbox = make(map[int64]counts)
	}
}

// export notes an own count for the fleet, of a call started at wall
// (Unix nanoseconds).
func (b *Breaker) export(wall int64, d counts) {
	if !b.sharing {
		return
	}
	k := wall / int64(b.hist.width)
	c := b.outbox[k]
	c.add(d)
	b.outbox[k] = c
}

// DrainEvidence returns the breaker's own counts since the last drain,
// by bucket, oldest first, for the other replicas' AddEvidence.
func (b *Breaker) DrainEvidence() []Evidence {
	if len(b.outbox) == 0 {
		return nil
	}
	out := make([]Evidence, 0, len(b.outbox))
	for k, c := range b.outbox {
		out = append(out, Evidence{Start: time.Unix(0, k*int64(b.hist.width)).UTC(), Calls: c.calls, Errors: c.errors, Slow: c.slow, Limited: c.limited})
	}
	clear(b.outbox)
	slices.SortFunc(out, func(a, b Evidence) int { return a.Start.Compare(b.Start) })
	return out
}

// AddEvidence counts another replica's calls as if this breaker had seen
// them, and judges: the fleet trips on the fleet's calls. Evidence from
// before the breaker's last trip or reset was already judged, and is
// dropped; while Open or HalfOpen the provider is judged by probes, not
// by calls, so nothing is added then.
func (b *Breaker) AddEvidence(now time.Time, ev []Evidence) {
	now = b.advance(now)
	if b.state == Open || b.state == HalfOpen {
		return
	}
	for _, e := range ev {
		if e.Start.Before(b.evidenceFrom) || e.Calls < 0 || e.Errors < 0 || e.Slow < 0 || e.Limited < 0 {
			continue
		}
		b.hist.add(e.Start, counts{calls: e.Calls, errors: min(e.Errors, e.Calls), slow: min(e.Slow, e.Calls), limited: e.Limited})
	}
	b.judge(now)
}
