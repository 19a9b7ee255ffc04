package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
)

func TestDecideContinue(t *testing.T) {
	prefill := ContinueCaps{Prefill: true, Prompt: true}
	prompt := ContinueCaps{Prompt: true}
	none := ContinueCaps{}
	c := func(caps ContinueCaps, healthy, same bool) ContinueCandidate {
		return ContinueCandidate{Caps: caps, Healthy: healthy, SameProvider: same}
	}
	cases := []struct {
		name string
		ask  ContinueAsk
		want Continuation
	}{
		{"nothing sent: a restart is the retry path's",
			ContinueAsk{Candidates: []ContinueCandidate{c(prefill, true, true), c(prefill, true, false)}},
			Continuation{Why: "nothing_sent"}},
		{"next target, by prefill",
			ContinueAsk{Sent: true, Candidates: []ContinueCandidate{c(prefill, true, true), c(prefill, true, false)}},
			Continuation{OK: true, Target: 1, Mode: ContinuePrefill}},
		{"next target, by prompt when it takes no prefill",
			ContinueAsk{Sent: true, Candidates: []ContinueCandidate{c(prefill, true, true), c(prompt, true, false)}},
			Continuation{OK: true, Target: 1, Mode: ContinuePrompt}},
		{"a target that can do neither is skipped",
			ContinueAsk{Sent: true, Candidates: []ContinueCandidate{c(prefill, true, true), c(none, true, false), c(prompt, true, false)}},
			Continuation{OK: true, Target: 2, Mode: ContinuePrompt}},
		{"an unhealthy target is skipped",
			ContinueAsk{Sent: true, Candidates: []ContinueCandidate{c(prefill, true, true), c(prefill, false, false), c(prompt, true, false)}},
			Continuation{OK: true, Target: 2, Mode: ContinuePrompt}},
		{"wraps to targets before the broken one",
			ContinueAsk{Sent: true, Current: 1, Candidates: []ContinueCandidate{c(prompt, true, false), c(prefill, true, true)}},
			Continuation{OK: true, Target: 0, Mode: ContinuePrompt}},
		{"the same provider only when it is the only healthy one, within budget",
			ContinueAsk{Sent: true, SameBudget: true, Candidates: []ContinueCandidate{c(prefill, true, true), c(prefill, false, false)}},
			Continuation{OK: true, Target: 0, Mode: ContinuePrefill}},
		{"the same provider without budget",
			ContinueAsk{Sent: true, Candidates: []ContinueCandidate{c(prefill, true, true)}},
			Continuation{Why: "no_budget"}},
		{"no capable target",
			ContinueAsk{Sent: true, Candidates: []ContinueCandidate{c(none, true, true), c(none, true, false)}},
			Continuation{Why: "no_capable_target"}},
		{"no healthy target",
			ContinueAsk{Sent: true, Candidates: []ContinueCandidate{c(none, true, true), c(prefill, false, false)}},
			Continuation{Why: "no_healthy_target"}},
		{"a break inside a tool call",
			ContinueAsk{Sent: true, Tool: true, Candidates: []ContinueCandidate{c(prefill, true, true), c(prefill, true, false)}},
			Continuation{Why: "tool_call"}},
		{"bounded",
			ContinueAsk{Sent: true, Done: MaxContinuations, Candidates: []ContinueCandidate{c(prefill, true, true), c(prefill, true, false)}},
			Continuation{Why: "max_continuations"}},
	}
	for _, tc := range cases {
		if got := DecideContinue(tc.ask); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestStallDeadline(t *testing.T) {
	c := StallConfig{}.WithDefaults()
	ms := time.Millisecond
	cases := []struct {
		name string
		gaps []time.Duration
		want time.Duration
	}{
		{"no gaps yet: the ceiling", nil, DefaultStallCeiling},
		{"too few gaps: the ceiling", []time.Duration{20 * ms, 20 * ms}, DefaultStallCeiling},
		{"a fast stream: the floor", []time.Duration{20 * ms, 20 * ms, 20 * ms, 20 * ms}, DefaultStallFloor},
		{"a slow stream: factor times its gap", []time.Duration{400 * ms, 400 * ms, 400 * ms, 400 * ms}, 8 * time.Second},
		{"a very slow stream: the ceiling", []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}, DefaultStallCeiling},
	}
	for _, tc := range cases {
		var g Gaps
		for _, d := range tc.gaps {
			g.Add(d)
		}
		if got := StallDeadline(c, g); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if DefaultStallCeiling >= 60*time.Second {
		t.Error("the stall ceiling must be well under the idle timeout")
	}
}

func TestOverlap(t *testing.T) {
	cases := []struct {
		sofar, next string
		want        int
	}{
		{"the cat sat", " on the mat", 0},
		{"the cat sat", "cat sat on the mat", 7},
		{"the cat sat ", "sat on", 4},
		{"hello wor", "world", 3},
		{"hel", "lo", 0},
		{"abc", "c d", 0},
		{"one two three", "one two three four", 13},
		{"", "x", 0},
	}
	for _, tc := range cases {
		if got := Overlap(tc.sofar, tc.next); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %d, want %d", tc.sofar, tc.next, got, tc.want)
		}
	}
}

// The engine's side of a continuation: only a committed request is
// continued; another provider costs the failing one's retry budget
// nothing; the same provider, the only one left, spends it.
func TestEngineContinue(t *testing.T) {
	newEngine := func() *Engine {
		return New(Config{
			Admission: admission.Config{Global: admission.Fixed(100)},
			Scopes:    []ScopeConfig{{Fixed: 10}, {Fixed: 10}},
			Retry:     RetryConfig{Budget: 0.1, Burst: 1},
		})
	}
	both := []ContinueCaps{{Prefill: true, Prompt: true}, {Prompt: true}}
	e := newEngine()
	a, _ := e.Arrive(at(0), Request{Targets: []int{0, 1}})
	if d := e.Continue(at(time.Second), a.ID, BreakCut, both, 0, false); d.OK {
		t.Fatalf("continued %+v before anything was sent", d)
	}
	e.Commit(at(time.Second), a.ID, 0)
	for i := range 3 {
		d := e.Continue(at(2*time.Second), a.ID, BreakCut, both, 0, false)
		if !d.OK || d.Target != 1 || d.Mode != ContinuePrompt {
			t.Fatalf("continuation %d: %+v; want target 1 by prompt, every time: it costs the broken provider nothing", i, d)
		}
	}
	// Only the broken call's own provider left: once, within its budget.
	same := []ContinueCaps{{Prefill: true, Prompt: true}, {}}
	if d := e.Continue(at(3*time.Second), a.ID, BreakStall, same, 0, false); !d.OK || d.Target != 0 || d.Mode != ContinuePrefill {
		t.Fatalf("%+v; want the same target, by prefill", d)
	}
	if d := e.Continue(at(3*time.Second), a.ID, BreakStall, same, 0, false); d.OK || d.Why != "no_budget" {
		t.Fatalf("%+v; want no budget left for a second call on the same provider", d)
	}
}
