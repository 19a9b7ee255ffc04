package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// syntheticEngine: one scope whose breaker trickles a probe every 200 ms
// once open for 5 s, with synthetic probes.
func syntheticEngine(t *testing.T) *Engine {
	t.Helper()
	e := routeEngine(t, 200*time.Millisecond)
	e.scopes[0].cfg.SyntheticProbes = true
	return e
}

func TestSyntheticProbesSpareUsers(t *testing.T) {
	e := syntheticEngine(t)
	tripPrimary(t, e) // open at 1.1 s until 6.1 s
	// The engine wakes itself at the end of the open time: probes need
	// no user traffic.
	if next, ok := e.NextTimer(); !ok || !next.Equal(at(6100*time.Millisecond)) {
		t.Fatalf("next timer %v %v, want the end of the open time", next, ok)
	}
	rd := e.Tick(at(6100 * time.Millisecond))
	if len(rd.Probe) != 1 || rd.Probe[0].Scope != 0 || !rd.Probe[0].Deadline.Equal(at(7100*time.Millisecond)) {
		t.Fatalf("want one probe to scope 0 ending at its 1 s timeout, got %+v", rd.Probe)
	}
	first := rd.Probe[0].ID
	// Users are refused at once while it probes, not made into probes.
	a, _ := e.Arrive(at(6200*time.Millisecond), Request{Targets: []int{0}})
	if a.Verdict != admission.Rejected || a.Refusal.Reason != admission.ReasonUnavailable {
		t.Fatalf("a user while probing: %v %q, want refused no_healthy_target", a.Verdict, a.Refusal.Reason)
	}
	// Trickling: the next probe comes one interval later, while the
	// first is still out.
	if next, ok := e.NextTimer(); !ok || !next.Equal(at(6300*time.Millisecond)) {
		t.Fatalf("next timer %v, want the next probe at 6.3 s", next)
	}
	rd = e.Tick(at(6300 * time.Millisecond))
	if len(rd.Probe) != 1 {
		t.Fatalf("want the second probe, got %+v", rd.Probe)
	}
	second := rd.Probe[0].ID
	// The first probe comes back slow: it proves nothing good. The
	// second comes back fast: fail-back starts, and users are served.
	if _, ok := e.FinishProbe(at(6400*time.Millisecond), first, Outcome{Kind: TimedOut}); !ok {
		t.Fatal("FinishProbe: unknown probe")
	}
	rd, _ = e.FinishProbe(at(6500*time.Millisecond), second, Outcome{Kind: OK})
	if len(rd.Transitions) != 1 || rd.Transitions[0].To != breaker.Recovering {
		t.Fatalf("a fast probe should start fail-back, got %+v", rd.Transitions)
	}
	if _, ok := e.FinishProbe(at(6500*time.Millisecond), second, Outcome{Kind: OK}); ok {
		t.Error("a second FinishProbe of one probe was accepted")
	}
	a, _ = e.Arrive(at(6600*time.Millisecond), Request{Targets: []int{0}})
	if a.Verdict != admission.Admitted {
		t.Fatalf("after a passing probe: %v, want admitted", a.Verdict)
	}
	// Recovering: no more probes.
	if rd := e.Tick(at(7 * time.Second)); len(rd.Probe) != 0 {
		t.Errorf("probes while recovering: %+v", rd.Probe)
	}
}

func TestSyntheticProbesStopAtTheSlotLimit(t *testing.T) {
	e := syntheticEngine(t) // two probe slots
	tripPrimary(t, e)
	n := 0
	for d := 6100 * time.Millisecond; d < 7*time.Second; d += 100 * time.Millisecond {
		n += len(e.Tick(at(d)).Probe)
	}
	// Probes hang: two go out, and no more until one times out at 1 s.
	if n != 2 {
		t.Fatalf("%d probes went out in 0.9 s with two slots and none back, want 2", n)
	}
	if rd := e.Tick(at(7200 * time.Millisecond)); len(rd.Probe) != 1 {
		t.Fatalf("after the first probe's timeout, want one new probe, got %+v", rd.Probe)
	}
}

func TestSyntheticProbesWithAClassicRound(t *testing.T) {
	e := routeEngine(t, 0) // a round of two probes at once
	e.scopes[0].cfg.SyntheticProbes = true
	tripPrimary(t, e)
	rd := e.Tick(at(6100 * time.Millisecond))
	if len(rd.Probe) != 2 {
		t.Fatalf("want a round of two probes, got %+v", rd.Probe)
	}
	e.FinishProbe(at(6300*time.Millisecond), rd.Probe[0].ID, Outcome{Kind: OK})
	rd, _ = e.FinishProbe(at(6400*time.Millisecond), rd.Probe[1].ID, Outcome{Kind: OK})
	if len(rd.Transitions) != 1 || rd.Transitions[0].Reason != breaker.ReasonProbesOK {
		t.Fatalf("both probes passed: %+v", rd.Transitions)
	}
}

// A probe answered 429 proves nothing and frees its slot, but the next
// probe waits for the provider's Retry-After (at least a second), or a
// provider that paces us would be probed back to back.
func TestSyntheticProbeAfter429Waits(t *testing.T) {
	e := routeEngine(t, 0) // a classic round of two, no interval
	e.scopes[0].cfg.SyntheticProbes = true
	tripPrimary(t, e)
	round := e.Tick(at(6100 * time.Millisecond)).Probe
	if len(round) != 2 {
		t.Fatalf("want a round of 2 probes, got %+v", round)
	}
	for _, p := range round {
		rd, _ := e.FinishProbe(at(6100*time.Millisecond), p.ID, Outcome{Kind: Overloaded, Status: 429, RetryAfter: 3 * time.Second})
		if len(rd.Probe) != 0 {
			t.Fatalf("a probe went out at once after a 429: %+v", rd.Probe)
		}
	}
	if next, _ := e.NextTimer(); !next.Equal(at(9100 * time.Millisecond)) {
		t.Fatalf("next timer %v, want the provider's Retry-After, 9.1 s", next)
	}
	if rd := e.Tick(at(9 * time.Second)); len(rd.Probe) != 0 {
		t.Fatalf("a probe before the provider's Retry-After: %+v", rd.Probe)
	}
	if rd := e.Tick(at(9100 * time.Millisecond)); len(rd.Probe) != 2 {
		t.Fatalf("after the Retry-After, want the round again, got %+v", rd.Probe)
	}
}
