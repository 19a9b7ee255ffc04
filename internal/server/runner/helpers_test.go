package runner

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/limit"
)

// The engine's own fakes, as lifecycle's tests define them: the Runner
// drives the same engine, so it is tested with the same limits.

func req(p admission.Priority, scope int) lifecycle.Request {
	return lifecycle.Request{Priority: p, Scope: scope}
}

var (
	crit  = req(admission.Critical, admission.NoScope)
	inter = req(admission.Interactive, admission.NoScope)
	bg    = req(admission.Background, admission.NoScope)
)

// fakeLimit is a limit.Algorithm that records what it hears. It stays at
// limit unless rise is set, in which case any success moves it there.
type fakeLimit struct {
	limit   int
	rise    int
	samples []limit.Sample
}

func (f *fakeLimit) Limit() int { return f.limit }

func (f *fakeLimit) Update(s limit.Sample) {
	f.samples = append(f.samples, s)
	if f.rise > 0 && !s.Dropped {
		f.limit = f.rise
	}
}

// windowLimit is a limit that also closes windows on the clock, like
// limit.WindowedAIMD. Each Tick may move the limit to the next entry of
// steps; ends are when its windows end (NextTick), each passed once a
// Tick reaches it.
type windowLimit struct {
	fakeLimit
	ticks []time.Time
	steps []int
	ends  []time.Time
}

func (w *windowLimit) Tick(now time.Time) {
	w.ticks = append(w.ticks, now)
	if len(w.steps) > 0 {
		w.limit, w.steps = w.steps[0], w.steps[1:]
	}
	for len(w.ends) > 0 && !w.ends[0].After(now) {
		w.ends = w.ends[1:]
	}
}

func (w *windowLimit) NextTick() (time.Time, bool) {
	if len(w.ends) == 0 {
		return time.Time{}, false
	}
	return w.ends[0], true
}

var _ limit.Algorithm = (*fakeLimit)(nil)

// oneScope is an engine config with one scope, limited by f.
func oneScope(f limit.Algorithm, sig lifecycle.Signal, slow time.Duration, ac admission.Config) lifecycle.Config {
	return lifecycle.Config{Admission: ac, Scopes: []lifecycle.ScopeConfig{{Name: "p", Limit: f, Signal: sig, SlowThreshold: slow}}}
}
