package scenario

import (
	"io"
	"time"

	"github.com/sluice-gw/sluice/internal/model/workload"
	"github.com/sluice-gw/sluice/internal/sim/report"
)

// This file is the one funnel from the clients: section to the workload
// models, used by every host (sluice sim and sluice load), so that a
// default or a scale cannot be applied in one host and forgotten in the
// other.

// Schedule is the clients' arrival rate. rpsScale multiplies every rate;
// timeScale multiplies every time and divides every rate (sluice load's
// --time-scale; the simulator passes 1).
func (c Clients) Schedule(rpsScale, timeScale float64) workload.Schedule {
	steps := make([]workload.Step, len(c.Rate))
	for i, s := range c.Rate {
		steps[i] = workload.Step{At: s.At, RPS: s.RPS, Ramp: s.Ramp}
	}
	return workload.NewSchedule(steps, rpsScale, timeScale)
}

// Spacing is how the clients' arrivals are spread (validated at load).
func (c Clients) Spacing() workload.Spacing {
	sp, _ := workload.ParseSpacing(c.Arrivals)
	return sp
}

// Policy is r as the workload model runs it: base and cap defaulted, then
// scaled by timeScale, and retries bounded by patience (which the host
// has scaled already).
// The strategy was validated at load.
func (r Retry) Policy(patience time.Duration, timeScale float64) workload.Retry {
	st, _ := workload.ParseStrategy(r.Strategy)
	// Defaults first, so that a scaled run scales them too.
	scale := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			d = def
		}
		return time.Duration(float64(d) * timeScale)
	}
	return workload.Retry{
		Strategy:    st,
		MaxAttempts: r.MaxAttempts,
		Base:        scale(r.Base, workload.DefaultBase),
		Cap:         scale(r.Cap, workload.DefaultCap),
		Patience:    patience,
	}
}

// WriteTimelines prints the rows minute by minute when asked (--minutes)
// or when the scenario names a reference, and the reference's own table
// next to the rows. sluice sim and sluice load both print through here.
func (f *File) WriteTimelines(w io.Writer, rows []*report.Row, minutes bool) {
	timeout := f.Scenario.Clients.Timeout
	if minutes || f.Scenario.Reference != "" {
		report.WriteMinutes(w, rows, timeout)
	}
	if f.Scenario.Reference == Seed002 {
		report.WriteSeed002(w, rows, timeout)
	}
}
