package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

func TestEvalDegradedRouting(t *testing.T) {
	chain := Request{Model: "chat", Targets: []int{0, 1}}
	t.Run("a degraded primary is passed over while the backup serves", func(t *testing.T) {
		e := routeEngine(t, 0)
		e.SetEvalDegraded("chat", 0, true)
		a, _ := e.Arrive(at(0), chain)
		if a.Verdict != admission.Admitted || a.Target != 1 {
			t.Fatalf("verdict %v target %d, want admitted to the backup (1)", a.Verdict, a.Target)
		}
		// Another model's requests, to the same providers, are not affected.
		other := chain
		other.Model = "other"
		if a, _ := e.Arrive(at(0), other); a.Target != 0 {
			t.Errorf("model other went to target %d; only chat's evals degraded its primary", a.Target)
		}
		e.SetEvalDegraded("chat", 0, false)
		if a, _ := e.Arrive(at(0), chain); a.Target != 0 {
			t.Errorf("recovered: target %d, want the primary again", a.Target)
		}
	})
	t.Run("every target degraded routes as if none were", func(t *testing.T) {
		e := routeEngine(t, 0)
		e.SetEvalDegraded("chat", 0, true)
		e.SetEvalDegraded("chat", 1, true)
		if a, _ := e.Arrive(at(0), chain); a.Target != 0 {
			t.Fatalf("target %d, want the primary: none is worse than the other", a.Target)
		}
	})
	t.Run("a slow primary that can still answer in time beats a degraded backup", func(t *testing.T) {
		e := routeEngine(t, 0)
		tripPrimary(t, e)
		e.SetEvalDegraded("chat", 1, true)
		r := chain
		r.Deadline = at(2*time.Second + 15*time.Second)
		a, _ := e.Arrive(at(2*time.Second), r)
		if a.Verdict != admission.Admitted || a.Target != 0 {
			t.Fatalf("verdict %v target %d, want served through the slow primary (0)", a.Verdict, a.Target)
		}
		// Without the evals' verdict the same request fails over.
		e2 := routeEngine(t, 0)
		tripPrimary(t, e2)
		if a, _ := e2.Arrive(at(2*time.Second), r); a.Target != 1 {
			t.Fatalf("not degraded: target %d, want the backup", a.Target)
		}
	})
	t.Run("a degraded backup is the last resort, not a refusal", func(t *testing.T) {
		e := routeEngine(t, 0)
		tripPrimary(t, e)
		e.SetEvalDegraded("chat", 1, true)
		// No deadline: the open primary cannot be judged reachable.
		a, _ := e.Arrive(at(2*time.Second), chain)
		if a.Verdict != admission.Admitted || a.Target != 1 {
			t.Fatalf("verdict %v target %d, want the degraded backup rather than a refusal", a.Verdict, a.Target)
		}
	})
	t.Run("no hedge goes to a degraded target; a retry may", func(t *testing.T) {
		e := hedgeEngine(1, 2)
		e.SetEvalDegraded("chat", 1, true)
		r := Request{Model: "chat", Targets: []int{0, 1}, HedgeAfter: time.Second}
		a, _ := e.Arrive(at(0), r)
		rd := e.Tick(at(time.Second))
		if len(rd.Second) != 1 || rd.Second[0].Target != 0 {
			t.Fatalf("hedge %+v, want it on the same (healthy) target, never the degraded one", rd.Second)
		}
		e2 := New(Config{Admission: admission.Config{Global: admission.Fixed(100)}, Scopes: []ScopeConfig{{Fixed: 10}, {Fixed: 10}},
			Retry: RetryConfig{Budget: 1, Burst: 5}})
		e2.SetEvalDegraded("chat", 1, true)
		b, _ := e2.Arrive(at(0), Request{Model: "chat", Targets: []int{0, 1}, Deadline: at(10 * time.Second)})
		// A Retry-After longer than the hold: the same target cannot take it.
		target, _, ok := e2.Retry(at(100*time.Millisecond), b.ID, Outcome{Kind: Overloaded, Status: 529, RetryAfter: 5 * time.Second})
		if !ok || target != 1 {
			t.Fatalf("retry ok=%v target %d, want the degraded backup as a last resort", ok, target)
		}
		_ = a
	})
}

func TestRouteNamesItsModel(t *testing.T) {
	rt := Route{Name: "chat", Targets: []int{0, 1}, Timeout: time.Second}
	if r := rt.Request(admission.Interactive, false, at(0), 0); r.Model != "chat" {
		t.Fatalf("request model %q, want chat", r.Model)
	}
}

// Calls slow on an open primary are not rescued onto a degraded backup
// while the primary may still answer them in time; once it more likely
// than not cannot, they are rescued onto it instead of being answered
// early: a likely-wrong answer beats none.
func TestDegradedBackupRescuesOnlyTheOutOfReach(t *testing.T) {
	b, err := breaker.New(breaker.Config{MinCalls: 4, Window: 4 * time.Second, SlowThreshold: time.Second,
		Steady: true, ProbeInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 10 * time.Second},
		Scopes:    []ScopeConfig{{Name: "primary", Breaker: b, SyntheticProbes: true, Rescue: true}, {Name: "backup", Fixed: 10}},
	})
	e.SetEvalDegraded("chat", 1, true)
	var ids []ID
	for i := range 4 {
		d := time.Duration(i) * 100 * time.Millisecond
		a, _ := e.Arrive(at(d), Request{Model: "chat", Targets: []int{0, 1}, Deadline: at(d + 15*time.Second)})
		if a.Target != 0 {
			t.Fatalf("arrival %d went to target %d", i, a.Target)
		}
		ids = append(ids, a.ID)
	}
	rd := e.Tick(at(1400 * time.Millisecond)) // all four slow: trip
	if len(rd.Transitions) == 0 || len(rd.Second) != 0 || len(rd.Abandon) != 0 {
		t.Fatalf("at the trip: %+v; want no rescue onto the degraded backup yet", rd)
	}
	rd = e.Tick(at(8 * time.Second))
	if len(rd.Abandon) != 0 || len(rd.Second) != 4 {
		t.Fatalf("at 8 s: abandon %+v second %+v; want all four rescued", rd.Abandon, rd.Second)
	}
	for i, s := range rd.Second {
		if s.ID != ids[i] || s.Target != 1 || s.Kind != Rescue {
			t.Errorf("second %d: %+v", i, s)
		}
	}
}
