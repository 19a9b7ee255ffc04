package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// arriveAll sends n requests for targets at now, all admitted to want.
func arriveAll(t *testing.T, e *Engine, now time.Time, n int, targets []int, want int) []ID {
	t.Helper()
	var ids []ID
	for i := range n {
		a, _ := e.Arrive(now, Request{Targets: targets, Deadline: now.Add(15 * time.Second)})
		if a.Verdict != admission.Admitted || a.Target != want {
			t.Fatalf("request %d: verdict %v target %d, want admitted to %d", i, a.Verdict, a.Target, want)
		}
		ids = append(ids, a.ID)
	}
	return ids
}

func hedgeIDs(hs []SecondCall) map[ID]SecondCall {
	m := make(map[ID]SecondCall)
	for _, h := range hs {
		m[h.ID] = h
	}
	return m
}

func TestRescueMovesStrandedCallsWhenTheBreakerTrips(t *testing.T) {
	e := routeEngine(t, 0)
	e.scopes[0].cfg.Rescue = true
	// Six calls go to the primary; the first four pass 1 s in flight
	// and trip it. The other two, younger, pass it after the trip.
	early := arriveAll(t, e, at(0), 4, []int{0, 1}, 0)
	late := arriveAll(t, e, at(500*time.Millisecond), 2, []int{0, 1}, 0)
	rd := e.Tick(at(1100 * time.Millisecond))
	if len(rd.Transitions) == 0 || rd.Transitions[0].To != breaker.Open {
		t.Fatalf("want the primary to trip, got %+v", rd.Transitions)
	}
	got := hedgeIDs(rd.Second)
	for _, id := range early {
		if h, ok := got[id]; !ok || h.Target != 1 || h.Kind != Rescue {
			t.Errorf("stranded call %d: second call %+v (found %v), want a rescue on the backup", id, h, ok)
		}
	}
	if len(got) != len(early) {
		t.Errorf("rescued %d calls at the trip, want the %d slow ones only", len(got), len(early))
	}
	// The younger calls are rescued the moment they, too, are slow.
	rd = e.Tick(at(1600 * time.Millisecond))
	got = hedgeIDs(rd.Second)
	for _, id := range late {
		if h, ok := got[id]; !ok || h.Kind != Rescue {
			t.Errorf("call %d slow after the trip: not rescued (%+v)", id, rd.Second)
		}
	}
	if st := e.SecondStats(); st.Rescued != 6 || st.Fired != 0 {
		t.Errorf("stats %+v: want 6 rescues and no hedges", st)
	}
	// A rescue races like a hedge: the backup answers first and wins.
	if !e.Commit(at(2*time.Second), early[0], 1) {
		t.Error("the rescue's first byte should win the request")
	}
}

func TestRescueOffLeavesCallsWhereTheyAre(t *testing.T) {
	e := routeEngine(t, 0)
	arriveAll(t, e, at(0), 4, []int{0, 1}, 0)
	if rd := e.Tick(at(1100 * time.Millisecond)); len(rd.Second) != 0 {
		t.Fatalf("rescue is off, yet second calls were sent: %+v", rd.Second)
	}
}

func TestRescueNeedsSomewhereToGo(t *testing.T) {
	e := routeEngine(t, 0)
	e.scopes[0].cfg.Rescue = true
	arriveAll(t, e, at(0), 4, []int{0}, 0) // no second target
	rd := e.Tick(at(1100 * time.Millisecond))
	if len(rd.Second) != 0 {
		t.Fatalf("nothing to rescue onto, yet: %+v", rd.Second)
	}
	// And a call already answering is never moved.
	e2 := routeEngine(t, 0)
	e2.scopes[0].cfg.Rescue = true
	ids := arriveAll(t, e2, at(0), 4, []int{0, 1}, 0)
	e2.FirstByte(at(900*time.Millisecond), ids[0])
	arriveAll(t, e2, at(100*time.Millisecond), 1, []int{0, 1}, 0)
	rd = e2.Tick(at(1100 * time.Millisecond))
	if _, ok := hedgeIDs(rd.Second)[ids[0]]; ok {
		t.Error("a call with its first byte was rescued")
	}
}

func TestRescueSavesTheUserOfAFailedProbe(t *testing.T) {
	e := routeEngine(t, 0)
	e.scopes[0].cfg.Rescue = true
	tripPrimary(t, e)
	e.Tick(at(7 * time.Second)) // half-open: the next request is a probe
	ids := arriveAll(t, e, at(7*time.Second), 1, []int{0, 1}, 0)
	// The probe times out at its slow threshold (1 s). The user is not
	// failed with it: the request moves to the backup.
	rd := e.Tick(at(8 * time.Second))
	if len(rd.Expire) != 0 {
		t.Fatalf("the probe's user was expired: %+v", rd)
	}
	if h, ok := hedgeIDs(rd.Second)[ids[0]]; !ok || h.Target != 1 {
		t.Fatalf("the probe's user was not moved to the backup: %+v", rd.Second)
	}
	// Its own deadline still holds.
	if rd := e.Tick(at(7*time.Second + 15*time.Second)); len(rd.Expire) != 1 || rd.Expire[0] != ids[0] {
		t.Fatalf("at the request's own deadline: %+v", rd)
	}
}

// A provider on probation gets no benefit of the doubt: a call that is
// slow while it recovers at a fail-back step is rescued too, without
// waiting for the re-trip that the step's few calls take a while to
// gather.
func TestRescueWhileRecovering(t *testing.T) {
	e := routeEngine(t, 0)
	e.scopes[0].cfg.Rescue = true
	tripPrimary(t, e)
	e.Tick(at(7 * time.Second)) // half-open: a round of two probes
	probes := arriveAll(t, e, at(7*time.Second), 2, []int{0, 1}, 0)
	for _, id := range probes {
		e.Finish(at(7100*time.Millisecond), id, Outcome{Kind: OK})
	}
	if st, step := e.scopes[0].cfg.Breaker.State(at(7100 * time.Millisecond)); st != breaker.Recovering || step != 0 {
		t.Fatalf("after two fast probes: %v step %d, want recovering at the first step", st, step)
	}
	// At 10%, one request in ten goes to the primary.
	var onPrimary ID
	for range 10 {
		a, _ := e.Arrive(at(7200*time.Millisecond), Request{Targets: []int{0, 1}, Deadline: at(30 * time.Second)})
		if a.Target == 0 {
			onPrimary = a.ID
		} else {
			e.Finish(at(7300*time.Millisecond), a.ID, Outcome{Kind: OK}) // the backup is fast
		}
	}
	if onPrimary == 0 {
		t.Fatal("no request went to the recovering primary")
	}
	rd := e.Tick(at(8300 * time.Millisecond)) // past its 1 s slow threshold
	if h, ok := hedgeIDs(rd.Second)[onPrimary]; !ok || h.Kind != Rescue || h.Target != 1 {
		t.Fatalf("a slow call on the recovering primary was not rescued: %+v", rd.Second)
	}
}

// A request whose deadline comes due in the Tick that trips its breaker
// is expired, not rescued too: a host ends an expired request with its
// first call's Finish, and a second call it never started would hold the
// request (and two slots) forever.
func TestExpiredRequestIsNotRescued(t *testing.T) {
	e := routeEngine(t, 0) // trips at 4 slow calls; slow after 1 s
	e.scopes[0].cfg.Rescue = true
	a, _ := e.Arrive(at(0), Request{Targets: []int{0, 1}, Deadline: at(2 * time.Second)})
	e.Tick(at(1100 * time.Millisecond)) // slow, but one call trips nothing
	arriveAll(t, e, at(time.Second), 3, []int{0, 1}, 0)
	rd := e.Tick(at(2100 * time.Millisecond)) // the three go slow: trip; a's deadline
	if len(rd.Transitions) == 0 || rd.Transitions[0].To != breaker.Open {
		t.Fatalf("want the primary to trip, got %+v", rd.Transitions)
	}
	if len(rd.Expire) != 1 || rd.Expire[0] != a.ID {
		t.Fatalf("expired %v, want the request at its deadline", rd.Expire)
	}
	if _, rescued := hedgeIDs(rd.Second)[a.ID]; rescued {
		t.Fatal("the expired request was rescued too")
	}
	e.Finish(at(2100*time.Millisecond), a.ID, Outcome{Kind: TimedOut})
	if _, held := e.reqs.Get(a.ID); held {
		t.Error("the engine still holds the expired request after its Finish")
	}
}

// queueEngine has a primary limited to primaryLimit calls, with room to
// queue behind it, and a backup; both breakers trip at minCalls calls.
func queueEngine(t *testing.T, minCalls, primaryLimit int) *Engine {
	t.Helper()
	mk := func() *breaker.Breaker {
		b, err := breaker.New(breaker.Config{MinCalls: minCalls, Window: 4 * time.Second, SlowThreshold: time.Second, OpenFor: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return New(Config{
		Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 10 * time.Second},
		Scopes:    []ScopeConfig{{Name: "primary", Fixed: primaryLimit, Breaker: mk()}, {Name: "backup", Breaker: mk()}},
	})
}

// Requests waiting for a provider whose breaker opens move to the next
// target and start there, instead of starting on the unhealthy provider
// when a slot frees.
func TestWaitersMoveWhenTheirProviderTrips(t *testing.T) {
	e := queueEngine(t, 4, 4)
	r := Request{Targets: []int{0, 1}, Deadline: at(15 * time.Second)}
	arriveAll(t, e, at(0), 4, []int{0, 1}, 0) // the primary is full
	var waiters []ID
	for range 2 {
		a, _ := e.Arrive(at(100*time.Millisecond), r)
		if a.Verdict != admission.Queued {
			t.Fatalf("verdict %v, want queued behind the full primary", a.Verdict)
		}
		waiters = append(waiters, a.ID)
	}
	rd := e.Tick(at(1100 * time.Millisecond)) // the four go slow: trip
	if len(rd.Transitions) == 0 || rd.Transitions[0].To != breaker.Open {
		t.Fatalf("want the primary to trip, got %+v", rd.Transitions)
	}
	if len(rd.Start) != 2 || rd.Start[0] != waiters[0] || rd.Start[1] != waiters[1] {
		t.Fatalf("started %v, want both waiters, oldest first", rd.Start)
	}
	for _, id := range waiters {
		if target, _ := e.Target(id); target != 1 {
			t.Errorf("waiter %d started on target %d, want the backup", id, target)
		}
	}
}

// A call whose own failure trips its provider's breaker frees a slot
// there; the waiters for that provider move on before the slot is handed
// out, so none of them starts on the provider just judged unhealthy.
func TestWaitersMoveBeforeTheTrippingCallsSlotIsReused(t *testing.T) {
	e := queueEngine(t, 2, 2)
	r := Request{Targets: []int{0, 1}, Deadline: at(15 * time.Second)}
	calls := arriveAll(t, e, at(0), 2, []int{0, 1}, 0)
	var waiters []ID
	for range 2 {
		a, _ := e.Arrive(at(10*time.Millisecond), r)
		waiters = append(waiters, a.ID)
	}
	// Both calls fail fast; the second failure trips the breaker.
	for i, id := range calls {
		rd, _ := e.Finish(at(100*time.Millisecond), id, Outcome{Kind: Failed, Status: 500})
		for _, s := range rd.Start {
			target, _ := e.Target(s)
			if i == 1 && target == 0 {
				t.Errorf("waiter %d started on the primary its neighbour's failure just tripped", s)
			}
		}
	}
	for _, id := range waiters[1:] {
		if target, _ := e.Target(id); target != 1 {
			t.Errorf("waiter %d is on target %d after the trip, want the backup", id, target)
		}
	}
}

// The limit's slow threshold tells the limit only: a breaker set to 5 s
// does not hear of calls that pass the limit's 1.1 s, and the limit
// still hears of them then.
func TestLimitThresholdLeavesTheBreakersAlone(t *testing.T) {
	b, err := breaker.New(breaker.Config{MinCalls: 4, Window: 4 * time.Second, SlowThreshold: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeLimit{limit: 100}
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100)},
		Scopes:    []ScopeConfig{{Name: "p", Limit: f, SlowThreshold: 1100 * time.Millisecond, Breaker: b}, {Name: "backup"}},
	})
	ids := arriveAll(t, e, at(0), 8, []int{0, 1}, 0)
	rd := e.Tick(at(1200 * time.Millisecond))
	if len(f.samples) != 8 || !f.samples[0].Dropped {
		t.Fatalf("the limit heard %d samples at 1.2 s, want 8 drops", len(f.samples))
	}
	if len(rd.Transitions) != 0 || len(rd.Second) != 0 {
		t.Fatalf("calls of 1.2 s moved a 5 s breaker: %+v", rd)
	}
	for _, id := range ids {
		e.Finish(at(2*time.Second), id, Outcome{Kind: OK})
	}
	// The breaker judges a call's slowness once its threshold has passed
	// since the call started.
	if rd := e.Tick(at(6 * time.Second)); len(rd.Transitions) != 0 {
		t.Fatalf("calls of 2 s tripped a 5 s breaker: %+v", rd.Transitions)
	}
	if len(f.samples) != 8 {
		t.Errorf("a call reported as a drop was sampled again at its end: %d samples", len(f.samples))
	}
	// Past the breaker's own threshold, the breaker hears of them.
	arriveAll(t, e, at(6*time.Second), 8, []int{0, 1}, 0)
	if rd := e.Tick(at(11100 * time.Millisecond)); len(rd.Transitions) == 0 || rd.Transitions[0].To != breaker.Open {
		t.Fatalf("calls past 5 s did not trip the breaker: %+v", rd.Transitions)
	}
}

// A stranded call is rescued as soon as the backup has room, not only
// at the trip, and when room is short the call with the least deadline
// left goes first, ahead of the queue.
func TestRescueWaitsForRoom(t *testing.T) {
	mk := func() *breaker.Breaker {
		b, err := breaker.New(breaker.Config{MinCalls: 4, Window: 4 * time.Second, SlowThreshold: time.Second, OpenFor: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 30 * time.Second},
		Scopes:    []ScopeConfig{{Name: "primary", Breaker: mk(), Rescue: true}, {Name: "backup", Fixed: 2}},
	})
	// The backup is full with two calls of its own (a model served by
	// the backup alone).
	busy := arriveAll(t, e, at(0), 2, []int{1}, 0)
	// Four calls on the primary, with deadlines far and near.
	var stranded []ID
	for _, d := range []time.Duration{20, 12, 16, 14} {
		a, _ := e.Arrive(at(0), Request{Targets: []int{0, 1}, Deadline: at(d * time.Second)})
		stranded = append(stranded, a.ID)
	}
	rd := e.Tick(at(1100 * time.Millisecond))
	if len(rd.Transitions) == 0 || rd.Transitions[0].To != breaker.Open || len(rd.Second) != 0 {
		t.Fatalf("at the trip: %+v; want the primary open and no room for rescues", rd)
	}
	// A request for the backup alone waits in the queue meanwhile.
	w, _ := e.Arrive(at(1200*time.Millisecond), Request{Targets: []int{1}})
	if w.Verdict != admission.Queued {
		t.Fatalf("backup-only request: %v, want queued", w.Verdict)
	}
	// One backup slot frees: the call with 12 s goes, not the queue's.
	rd, _ = e.Finish(at(2*time.Second), busy[0], Outcome{Kind: OK})
	if len(rd.Second) != 1 || rd.Second[0].ID != stranded[1] || rd.Second[0].Kind != Rescue || len(rd.Start) != 0 {
		t.Fatalf("first free slot: second %+v start %v; want the 12 s call rescued", rd.Second, rd.Start)
	}
	rd, _ = e.Finish(at(2500*time.Millisecond), busy[1], Outcome{Kind: OK})
	if len(rd.Second) != 1 || rd.Second[0].ID != stranded[3] {
		t.Fatalf("second free slot: %+v; want the 14 s call", rd.Second)
	}
	if st := e.SecondStats(); st.Rescued != 2 {
		t.Errorf("rescued %d, want 2", st.Rescued)
	}
}

// A call slow on a provider whose breaker is open, with nowhere to go,
// is answered early once the provider more likely than not cannot meet
// its deadline: when the estimate L + 2(A - L) reaches this call's
// start-to-deadline time D, L the last answer's latency (at least the
// slow threshold) and A the oldest unanswered call's age.
func TestAnswerEarlyWhenTheDeadlineIsOutOfReach(t *testing.T) {
	e := holdEngine(t)
	var ids []ID
	for i := range 4 {
		d := time.Duration(i) * 100 * time.Millisecond
		a, _ := e.Arrive(at(d), Request{Targets: []int{0}, Deadline: at(d + 15*time.Second)})
		ids = append(ids, a.ID)
	}
	rd := e.Tick(at(1400 * time.Millisecond)) // all four slow: trip
	if len(rd.Transitions) == 0 || len(rd.Abandon) != 0 {
		t.Fatalf("at the trip: %+v", rd)
	}
	// No answer yet, so L is the 1 s threshold; the oldest started at 0
	// and each has 15 s: all are judged at A = (15 + 1) / 2 = 8 s.
	if next, ok := e.abandonT.next(); !ok || !next.Equal(at(8*time.Second)) {
		t.Fatalf("judged at %v, want 8 s", next)
	}
	rd = e.Tick(at(8 * time.Second))
	if len(rd.Abandon) != 4 {
		t.Fatalf("at 8 s: abandon %+v, want all four", rd.Abandon)
	}
	for i, f := range rd.Abandon {
		if f.Ticket != ids[i] || f.Reason != admission.ReasonTooSlow || f.RetryAfter <= 0 {
			t.Errorf("abandon %d: %+v", i, f)
		}
	}
	if e.SecondStats().Abandoned != 4 {
		t.Errorf("stats: %+v", e.SecondStats())
	}
	for _, id := range ids {
		e.Finish(at(8100*time.Millisecond), id, Outcome{Kind: Cancelled})
	}
	if e.reqs.Len() != 0 {
		t.Errorf("%d requests left", e.reqs.Len())
	}
}

// The judgement follows the evidence: an answer sets L, the next oldest
// call sets a later time, and a call that starts answering is left
// alone.
func TestAnswerEarlyFollowsTheEvidence(t *testing.T) {
	e := holdEngine(t)
	var ids []ID
	for i := range 4 {
		d := time.Duration(i) * time.Second / 4
		a, _ := e.Arrive(at(d), Request{Targets: []int{0}, Deadline: at(d + 10*time.Second)})
		ids = append(ids, a.ID)
	}
	e.Tick(at(1800 * time.Millisecond)) // trip
	// The oldest answers at 3 s (slow, but in time): L = 3 s, and the
	// rest, with D = 10 s, are judged once the next oldest (from 0.25 s)
	// has waited (10 + 3) / 2 = 6.5 s: at 6.75 s.
	e.Finish(at(3*time.Second), ids[0], Outcome{Kind: OK})
	rd := e.Tick(at(6500 * time.Millisecond))
	if len(rd.Abandon) != 0 {
		t.Fatalf("at 6.5 s: %+v, want none yet", rd.Abandon)
	}
	e.FirstByte(at(6600*time.Millisecond), ids[1]) // it starts answering
	rd = e.Tick(at(6750 * time.Millisecond))
	if len(rd.Abandon) != 0 {
		t.Fatalf("at 6.75 s: %+v; ids[1] is answering, so ids[2] (from 0.5 s) is judged at 7 s", rd.Abandon)
	}
	rd = e.Tick(at(7 * time.Second))
	if len(rd.Abandon) != 2 || rd.Abandon[0].Ticket != ids[2] || rd.Abandon[1].Ticket != ids[3] {
		t.Fatalf("at 7 s: %+v, want ids[2] and ids[3]", rd.Abandon)
	}
}
