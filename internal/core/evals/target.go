package evals

import (
	"sort"
	"time"
)

// maxFailures is how many of a target's latest failures are kept for
// /admin/evals.
const maxFailures = 5

// run is one pass of a set's cases against a target.
type run struct {
	at             time.Time
	passed, judged int
}

// targetState is one target's schedule and record.
type targetState struct {
	set *Set
	idx int
	due time.Time // its next run
	// running counts the calls of its current run not yet done; started
	// those of them handed to the host.
	running, started int
	cur              run
	runs             []run // the latest, at most set.Window
	degraded         bool
	lastRun          time.Time
	calls            Calls
	failures         []Failure // the latest, newest last
}

// Failure is one eval call that failed its check or got no answer.
type Failure struct {
	At   time.Time `json:"at"`
	Case string    `json:"case"`
	// Kind is "fail" (answered wrongly) or "error" (no answer).
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

func (t *targetState) startRun(now time.Time) { t.cur = run{at: now} }

func (t *targetState) record(now time.Time, cs string, r Result) {
	switch {
	case r.Pass():
		t.calls.Pass++
		t.cur.passed++
		t.cur.judged++
	case r.Answered:
		t.calls.Fail++
		t.cur.judged++
		t.recordFailure(Failure{At: now, Case: cs, Kind: "fail", Reason: r.Reason})
	default:
		t.calls.Error++
		t.recordFailure(Failure{At: now, Case: cs, Kind: "error", Reason: r.Reason})
	}
}

// recordFailure keeps a failure for /admin/evals.
func (t *targetState) recordFailure(f Failure) {
	t.failures = append(t.failures, f)
	if len(t.failures) > maxFailures {
		t.failures = t.failures[len(t.failures)-maxFailures:]
	}
}

// passRate is the share of judged answers that passed over the window,
// and how many were judged.
func (t *targetState) passRate() (float64, int) {
	p, j := 0, 0
	for _, r := range t.runs {
		p, j = p+r.passed, j+r.judged
	}
	if j == 0 {
		return 0, 0
	}
	return float64(p) / float64(j), j
}

// finishRun closes the current run and judges the target: degraded when
// its window holds a run's worth of answers and their pass rate is
// below the threshold; recovered when the rate is back at or above it.
func (t *targetState) finishRun(now time.Time) (Transition, bool) {
	t.lastRun = now
	if t.cur.judged > 0 {
		t.runs = append(t.runs, t.cur)
		if len(t.runs) > t.set.Window {
			t.runs = t.runs[len(t.runs)-t.set.Window:]
		}
	}
	rate, judged := t.passRate()
	degraded := t.degraded
	switch {
	case judged >= len(t.set.Cases) && rate < t.set.Threshold:
		degraded = true
	case judged > 0 && rate >= t.set.Threshold:
		degraded = false
	}
	if degraded == t.degraded {
		return Transition{}, false
	}
	t.degraded = degraded
	tg := t.set.Targets[t.idx]
	return Transition{Model: t.set.Model, Target: t.idx, Provider: tg.Provider, Upstream: tg.Upstream, Degraded: degraded, PassRate: rate, Judged: judged}, true
}

// Status is one model's eval results, as /admin/evals shows them.
type Status struct {
	Model     string         `json:"model"`
	Interval  string         `json:"interval"`
	Threshold float64        `json:"threshold"`
	Cases     int            `json:"cases"`
	Targets   []TargetStatus `json:"targets"`
}

// TargetStatus is one target's eval results.
type TargetStatus struct {
	Provider string `json:"provider"`
	Upstream string `json:"model"`
	// PassRate is over the window; nil until an answer was judged.
	PassRate *float64 `json:"pass_rate"`
	Judged   int      `json:"judged"`
	Degraded bool     `json:"degraded"`
	// LastRun is when its last run ended; nil before the first.
	LastRun  *time.Time `json:"last_run"`
	NextRun  time.Time  `json:"next_run"`
	Running  bool       `json:"running"`
	Calls    Calls      `json:"calls"`
	Failures []Failure  `json:"last_failures"`
}

// Status reports every set's targets, models by name.
func (c *Core) Status() []Status {
	var out []Status
	by := map[*Set]int{}
	for _, t := range c.targets {
		i, ok := by[t.set]
		if !ok {
			i = len(out)
			by[t.set] = i
			out = append(out, Status{Model: t.set.Model, Interval: t.set.Interval.String(), Threshold: t.set.Threshold, Cases: len(t.set.Cases)})
		}
		tg := t.set.Targets[t.idx]
		ts := TargetStatus{Provider: tg.Provider, Upstream: tg.Upstream, Degraded: t.degraded, NextRun: t.due,
			Running: t.running > 0, Calls: t.calls, Failures: append([]Failure{}, t.failures...)}
		if rate, j := t.passRate(); j > 0 {
			ts.PassRate, ts.Judged = &rate, j
		}
		if !t.lastRun.IsZero() {
			lr := t.lastRun
			ts.LastRun = &lr
		}
		out[i].Targets = append(out[i].Targets, ts)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

// PassRate reports a target's pass rate over its window and how many
// answers it counts (0: none judged yet).
func (c *Core) PassRate(model string, target int) (float64, int) {
	for _, t := range c.targets {
		if t.set.Model == model && t.idx == target {
			return t.passRate()
		}
	}
	return 0, 0
}
