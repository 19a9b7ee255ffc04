package breaker

import "time"

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
			b.stepTo(now, step, ReasonFleet, counts{})
		case Recovering:
			if step > b.step {
				b.stepTo(now, step, ReasonFleet, counts{})
			}
		}
	}
}
