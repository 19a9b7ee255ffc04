package lifecycle

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// In a fleet, each replica admits its share of the fixed limits, and
// the share moves as replicas come and go.
func TestFleetShare(t *testing.T) {
	var live atomic.Int64
	live.Store(3)
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: time.Second},
		Scopes:    []ScopeConfig{{Fixed: 10}},
		Replicas:  func() int { return int(live.Load()) },
	})
	admitted := func() int {
		n := 0
		for {
			a, _ := e.Arrive(at(0), Request{Targets: []int{0}})
			if a.Verdict != admission.Admitted {
				return n
			}
			n++
		}
	}
	if n := admitted(); n != 3 {
		t.Fatalf("with 3 replicas, one admitted %d of a provider's 10, want 3", n)
	}
	live.Store(1)
	if n := admitted(); n != 7 {
		t.Fatalf("alone, it admitted %d more, want 7 (all 10)", n)
	}
	five := func() int { return 5 }
	if got := (shared{admission.Fixed(0), five, nil}).Limit(); got != 0 {
		t.Fatalf("an unlimited limit split: %d, want 0 (still unlimited)", got)
	}
	if got := (shared{admission.Fixed(2), five, nil}).Limit(); got != 1 {
		t.Fatalf("2 split 5 ways: %d, want at least 1", got)
	}
}

// With a claim on the fleet's limits (Config.Parts), a replica admits
// what its part gives it: nothing before it holds a part (requests
// wait), a part of each limit as it grows (a Pump starts the waiters),
// and the limit divided once it holds an equal part. SharedLoads reports
// each shared limit, whole, with the calls under it.
func TestFleetParts(t *testing.T) {
	var parts atomic.Int64
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 20, MaxWait: time.Minute},
		Scopes:    []ScopeConfig{{Fixed: 10}, {}},
		Replicas:  func() int { return 2 },
		Parts:     parts.Load,
	})
	arrive := func(n int) (started int) {
		for range n {
			a, _ := e.Arrive(at(0), Request{Targets: []int{0}})
			if a.Verdict == admission.Admitted {
				started++
			}
		}
		return started
	}
	if n := arrive(6); n != 0 {
		t.Fatalf("holding no part, a replica started %d calls", n)
	}
	if got := e.ScopeLimit(0); got != admission.None {
		t.Fatalf("scope limit %d holding no part, want None", got)
	}
	parts.Store(fleet.Whole * 3 / 10) // what a loaded replica gave back
	if rd := e.Pump(at(0)); len(rd.Start) != 3 {
		t.Fatalf("granted 3/10 of the limits, the pump started %d waiters, want 3", len(rd.Start))
	}
	parts.Store(fleet.Target(2))
	if rd := e.Pump(at(0)); len(rd.Start) != 2 {
		t.Fatalf("granted an equal part, the pump started %d more, want 2 (5 of 10)", len(rd.Start))
	}
	got := e.SharedLoads()
	want := []fleet.Load{{Limit: 10, InFlight: 5}, {Limit: 100, InFlight: 5}}
	if !slices.Equal(got, want) {
		t.Errorf("SharedLoads() = %v, want %v (the provider's whole limit, the global one; the unlimited scope left out)", got, want)
	}
}

// In a fleet, each replica keeps its share of a provider's budget: a
// third of it with three replicas live, all of it alone.
func TestFleetProviderBudgetShare(t *testing.T) {
	var live atomic.Int64
	live.Store(3)
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(1000), MaxDepth: 10, MaxWait: time.Second},
		Scopes:    []ScopeConfig{{}},
		Budgets:   Budgets{Scopes: []quota.Limits{perMinute(90, 0, 0)}},
		Replicas:  func() int { return int(live.Load()) },
	})
	n := 0
	for {
		a, _ := e.Arrive(at(0), Request{Targets: []int{0}})
		if a.Verdict != admission.Admitted {
			break
		}
		n++
	}
	if n != 30 {
		t.Fatalf("with 3 replicas, one started %d calls of a provider's 90 a minute, want 30", n)
	}
}

// A replica that does not probe (another holds the fleet's lease) hears
// of a failed probe as an Open verdict: the requests it held for a
// probe's verdict are refused then, not at the end of their wait.
func TestAdoptedFailedProbeRefusesHeld(t *testing.T) {
	// Probes time out after 400 ms: a verdict is due within the hold
	// budget.
	b, err := breaker.New(breaker.Config{Steady: true, SlowThreshold: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(10), MaxDepth: 10, MaxWait: 5 * time.Second},
		Scopes:    []ScopeConfig{{Fixed: 10, Breaker: b, SyntheticProbes: true}},
	})
	e.Adopt(at(0), 0, breaker.Open, 0, breaker.ReasonErrorRate)
	a, _ := e.Arrive(at(time.Second), Request{Targets: []int{0}, Deadline: at(time.Minute)})
	if a.Verdict != admission.Queued {
		t.Fatalf("arrival with the provider out of rotation: %+v, want held for a probe's verdict", a)
	}
	rd := e.Adopt(at(1200*time.Millisecond), 0, breaker.HalfOpen, -1, breaker.ReasonProbeError)
	if len(rd.Refuse) != 1 || rd.Refuse[0].Ticket != a.ID {
		t.Fatalf("after the fleet's probe failed: %+v, want the held request refused", rd.Refuse)
	}
}
