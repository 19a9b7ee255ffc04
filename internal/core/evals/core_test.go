package evals

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testSet is a model with two targets and cases that pass when their
// answer is "ok".
func testSet(cases int) *Set {
	s := &Set{Model: "chat", Targets: []Target{{"primary", "m1"}, {"backup", "m2"}},
		Interval: time.Minute, Timeout: 10 * time.Second, Threshold: 0.8, Window: 2}
	for i := range cases {
		s.Cases = append(s.Cases, Case{Name: string(rune('a' + i)), Prompt: "say ok", Check: Exact("ok")})
	}
	return s
}

// answer judges "ok" (right) or "no" (wrong) as a host would.
func answer(c Call, text string) Result {
	return Result{Answered: true, Reason: c.Set.Cases[c.Case].Check.Judge(text), Latency: time.Second}
}

// runAll drains a core's due calls at now, answering target i's calls
// with text(i), and returns the transitions.
func runAll(c *Core, now time.Time, text func(target int) string) []Transition {
	var out []Transition
	for {
		calls := c.Due(now)
		if len(calls) == 0 {
			return out
		}
		for _, call := range calls {
			if s := text(call.Target); s == "" {
				out = append(out, c.Done(now, call.ID, Result{Reason: "status 500"})...)
			} else {
				out = append(out, c.Done(now, call.ID, answer(call, s))...)
			}
		}
	}
}

func TestCoreSchedule(t *testing.T) {
	t.Run("first runs come within a tenth of the interval, jittered apart", func(t *testing.T) {
		c := NewCore(Options{Sets: []*Set{testSet(3)}, Seed: 7}, t0)
		next, ok := c.NextTimer()
		if !ok || next.Sub(t0) >= 6*time.Second {
			t.Fatalf("first run at %v, want within 6s", next.Sub(t0))
		}
		var dues []time.Time
		for _, ts := range c.targets {
			dues = append(dues, ts.due)
		}
		if dues[0].Equal(dues[1]) {
			t.Errorf("both targets due at %v: they run in step", dues[0].Sub(t0))
		}
	})
	t.Run("no more than max_in_flight calls at once", func(t *testing.T) {
		c := NewCore(Options{Sets: []*Set{testSet(3)}, MaxInFlight: 2, Seed: 1}, t0)
		now := t0.Add(10 * time.Second)
		calls := c.Due(now)
		if len(calls) != 2 {
			t.Fatalf("%d calls handed out, want 2", len(calls))
		}
		if more := c.Due(now); len(more) != 0 {
			t.Fatalf("%d more calls with 2 in flight", len(more))
		}
		c.Done(now, calls[0].ID, answer(calls[0], "ok"))
		if more := c.Due(now); len(more) != 1 {
			t.Fatalf("%d calls after one ended, want 1", len(more))
		}
	})
	t.Run("runs repeat at the interval, ±10 %", func(t *testing.T) {
		c := NewCore(Options{Sets: []*Set{testSet(1)}, Seed: 3}, t0)
		now := t0
		var starts []time.Time
		for len(starts) < 8 {
			next, _ := c.NextTimer()
			now = next
			for _, call := range c.Due(now) {
				if call.Target == 0 {
					starts = append(starts, now)
				}
				c.Done(now, call.ID, answer(call, "ok"))
			}
		}
		for i := 1; i < len(starts); i++ {
			if d := starts[i].Sub(starts[i-1]); d < 54*time.Second || d > 66*time.Second {
				t.Errorf("run %d came %v after the last; want 54s–66s", i, d)
			}
		}
	})
	t.Run("a run still going skips its next turn", func(t *testing.T) {
		c := NewCore(Options{Sets: []*Set{testSet(1)}, Seed: 3}, t0)
		first := c.Due(t0.Add(10 * time.Second))
		if len(first) != 2 {
			t.Fatalf("%d calls, want one per target", len(first))
		}
		if calls := c.Due(t0.Add(2 * time.Minute)); len(calls) != 0 {
			t.Fatalf("%d calls while the first run is still going", len(calls))
		}
	})
	t.Run("the call bucket holds a minute's calls", func(t *testing.T) {
		s := testSet(5)
		s.Interval = time.Second
		c := NewCore(Options{Sets: []*Set{s}, MaxInFlight: 100, CallsPerMinute: 6}, t0)
		calls := c.Due(t0.Add(time.Second))
		if len(calls) != 6 {
			t.Fatalf("%d calls, want the bucket's 6", len(calls))
		}
		next, _ := c.NextTimer()
		if d := next.Sub(t0.Add(time.Second)); d < 9*time.Second || d > 11*time.Second {
			t.Errorf("next call in %v, want about 10s (6 a minute)", d)
		}
	})
}

func TestCoreDegradesAndRecovers(t *testing.T) {
	c := NewCore(Options{Sets: []*Set{testSet(5)}, MaxInFlight: 10, Seed: 1}, t0)
	backup := "ok"
	text := func(target int) string {
		if target == 1 {
			return backup
		}
		return "ok"
	}
	now := t0.Add(10 * time.Second)
	if tr := runAll(c, now, text); len(tr) != 0 {
		t.Fatalf("healthy run: %+v", tr)
	}
	backup = "no"
	now = now.Add(66 * time.Second)
	// The window holds a passing run and a failing one: 50 %.
	tr := runAll(c, now, text)
	if len(tr) != 1 || !tr[0].Degraded || tr[0].Target != 1 || tr[0].Provider != "backup" || tr[0].PassRate != 0.5 {
		t.Fatalf("transitions %+v, want the backup degraded at a 0.5 pass rate", tr)
	}
	if !c.Degraded("chat", 1) || c.Degraded("chat", 0) {
		t.Fatal("Degraded does not say so")
	}
	now = now.Add(66 * time.Second)
	if tr := runAll(c, now, text); len(tr) != 0 {
		t.Fatalf("still failing: %+v; a transition is reported once", tr)
	}
	// Errors say nothing about correctness: no transition either way.
	backup = ""
	now = now.Add(66 * time.Second)
	if tr := runAll(c, now, text); len(tr) != 0 {
		t.Fatalf("errors moved the verdict: %+v", tr)
	}
	backup = "ok"
	now = now.Add(66 * time.Second)
	tr = runAll(c, now, text) // window: a failing run, a passing one
	if len(tr) != 0 {
		t.Fatalf("one passing run at 50 %% recovered it: %+v", tr)
	}
	now = now.Add(66 * time.Second)
	tr = runAll(c, now, text)
	if len(tr) != 1 || tr[0].Degraded || tr[0].PassRate != 1 {
		t.Fatalf("transitions %+v, want the backup recovered", tr)
	}

	st := c.Status()
	if len(st) != 1 || len(st[0].Targets) != 2 {
		t.Fatalf("status %+v", st)
	}
	b := st[0].Targets[1]
	if b.Degraded || b.PassRate == nil || *b.PassRate != 1 || b.LastRun == nil || b.Calls != (Calls{Pass: 15, Fail: 10, Error: 5}) {
		t.Errorf("backup status %+v", b)
	}
	if len(b.Failures) != maxFailures || b.Failures[len(b.Failures)-1].Kind != "error" || b.Failures[len(b.Failures)-1].Reason != "status 500" {
		t.Errorf("failures %+v", b.Failures)
	}
}

// A target is not judged on fewer answers than a run's worth.
func TestCoreNeedsARunsWorth(t *testing.T) {
	c := NewCore(Options{Sets: []*Set{testSet(4)}, MaxInFlight: 10}, t0)
	now := t0.Add(10 * time.Second)
	calls := c.Due(now)
	var tr []Transition
	for i, call := range calls {
		if call.Target != 1 {
			c.Done(now, call.ID, answer(call, "ok"))
			continue
		}
		if i%4 == 0 { // one wrong answer, the rest errors
			tr = append(tr, c.Done(now, call.ID, answer(call, "no"))...)
		} else {
			tr = append(tr, c.Done(now, call.ID, Result{Reason: "timeout"})...)
		}
	}
	if len(tr) != 0 {
		t.Fatalf("judged on one answer: %+v", tr)
	}
}
