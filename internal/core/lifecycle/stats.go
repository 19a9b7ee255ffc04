package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// BreakerStats reports each scope's breaker at now, in scope order, nil
// where a scope has none (a pooled provider's replicas have theirs in
// PoolStats).
func (e *Engine) BreakerStats(now time.Time) []*breaker.Stats {
	out := make([]*breaker.Stats, len(e.scopes))
	for i, sc := range e.scopes {
		if sc.cfg.Breaker != nil {
			st := sc.cfg.Breaker.Stats(now)
			out[i] = &st
		}
	}
	return out
}

// Requests is how many requests the engine still tracks: queued, in
// flight, or with a second call live. A host that has finished every
// call it was handed should see 0; anything else is a leak that
// admission's Snapshot cannot show.
func (e *Engine) Requests() int { return e.reqs.Len() }
