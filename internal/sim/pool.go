package sim

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/pool"
)

// upstreamOf is the modelled server q's call (attempt) on scope goes to:
// the provider's, or, for a pool, the replica its gateway's engine
// picked when it started the call.
func (r *run) upstreamOf(q *request, attempt, scope int) *upstream {
	if reps := r.pools[scope]; reps != nil {
		if i, ok := q.rep.eng.Replica(q.id, attempt); ok && i < len(reps) {
			return reps[i]
		}
		return reps[0]
	}
	return r.ups[scope]
}

// scrapeEvery is the shortest scrape interval of the config's pools
// with metrics, 0 if none has any.
func (r *run) scrapeEvery() time.Duration {
	var every time.Duration
	for _, p := range r.cfg.Providers {
		if !p.Pooled() {
			continue
		}
		for _, rc := range p.Replicas {
			if rc.MetricsURL != "" && (every == 0 || p.Pool.ScrapeInterval.D() < every) {
				every = p.Pool.ScrapeInterval.D()
			}
		}
	}
	return every
}

// startScrapes schedules the first scrape of the pools' metrics.
func (r *run) startScrapes() {
	if r.scrapeEvery() > 0 {
		r.push(0, classSample, evScrape, nil)
	}
}

// scrape hands every gateway replica's engine what each pooled replica
// with a metrics URL shows now, from its capacity model, as the
// gateway's scraper reads it from sluice mock's /metrics, then
// schedules the next. The scrape is instant: the simulator models a
// replica's load, not its metrics endpoint's delay.
func (r *run) scrape() {
	for s, reps := range r.pools {
		if reps == nil {
			continue
		}
		pc := r.cfg.Providers[s]
		for i, u := range reps {
			if pc.Replicas[i].MetricsURL == "" {
				continue
			}
			running := u.capacity.Running()
			l := pool.Load{Waiting: float64(u.capacity.Waiting()), Running: float64(running)}
			if m := u.cfg.MaxRunning; m > 0 {
				l.KVCache = min(1, float64(running)/float64(m))
			}
			for _, rp := range r.reps {
				r.apply(rp, rp.eng.Observe(r.clock(r.now), s, i, l))
			}
		}
	}
	if next := r.now + r.scrapeEvery(); next < r.sc.Duration {
		r.push(next, classSample, evScrape, nil)
	}
}
