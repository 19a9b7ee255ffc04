package fleet

import (
	"errors"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestAnnounce(t *testing.T) {
	for _, c := range []struct {
		to   breaker.State
		why  breaker.Reason
		want bool
	}{
		{breaker.Open, breaker.ReasonSlowRate, true},
		{breaker.Open, breaker.ReasonErrorRate, true},
		{breaker.Recovering, breaker.ReasonProbesOK, true},
		{breaker.Closed, breaker.ReasonRecovered, true},
		{breaker.Open, breaker.ReasonFleet, false},
		{breaker.Closed, breaker.ReasonFleet, false},
		{breaker.HalfOpen, breaker.ReasonOpenElapsed, false},
		{breaker.HalfOpen, breaker.ReasonProbeError, false},
	} {
		if got := Announce(c.to, c.why); got != c.want {
			t.Errorf("Announce(%v, %v) = %v, want %v", c.to, c.why, got, c.want)
		}
	}
}

func TestProbeFailed(t *testing.T) {
	want := Verdict{To: breaker.HalfOpen, Step: -1, Reason: breaker.ReasonProbeError}
	if got := ProbeFailed(); got != want {
		t.Fatalf("ProbeFailed() = %+v, want %+v", got, want)
	}
	if Announce(want.To, want.Reason) {
		t.Error("a failed probe must not also be announced as a transition")
	}
}

// The lease rule, step by step: one holder at a time, renewal by the
// holder, takeover once the ttl runs out.
func TestLease(t *testing.T) {
	const ttl = 5 * time.Second
	var l Lease
	for i, s := range []struct {
		holder string
		at     time.Duration
		want   bool
	}{
		{"a", 0, true},                // free
		{"b", time.Second, false},     // a holds it
		{"a", 2 * time.Second, true},  // a renews: until 7 s
		{"b", 6 * time.Second, false}, // still a's
		{"b", 7 * time.Second, true},  // lapsed at 7 s exactly
		{"a", 8 * time.Second, false}, // b's now
		{"b", 20 * time.Second, true}, // b renews after its own lapse
		{"c", 25*time.Second - 1, false},
		{"c", 25 * time.Second, true},
	} {
		if got := l.Acquire(s.holder, t0.Add(s.at), ttl); got != s.want {
			t.Fatalf("step %d: %s at %v: %v, want %v", i, s.holder, s.at, got, s.want)
		}
	}
}

func TestMayProbe(t *testing.T) {
	down := errors.New("down")
	for _, c := range []struct {
		held  bool
		err   error
		alone bool
		want  bool
	}{{true, nil, false, true}, {false, nil, false, false}, {false, down, true, true}, {true, down, true, true},
		// A lease call that fails while the store is thought up: another
		// replica may hold the lease, so this one does not probe.
		{false, down, false, false}, {true, down, false, false}} {
		if got := MayProbe(c.held, c.err, c.alone); got != c.want {
			t.Errorf("MayProbe(%v, %v, alone %v) = %v", c.held, c.err, c.alone, got)
		}
	}
}

func TestSpent(t *testing.T) {
	st := func(limit, burst, rem int64) quota.Status {
		return quota.Status{Limit: limit, Burst: burst, Remaining: rem}
	}
	for _, c := range []struct {
		name string
		last [3]quota.Status
		live int
		want quota.Cost
	}{
		{"nothing known", [3]quota.Status{}, 3, quota.Cost{}},
		{"full", [3]quota.Status{st(600, 100, 100)}, 3, quota.Cost{}},
		{"rounds up", [3]quota.Status{st(600, 100, 0), st(1000, 1000, 999)}, 3, quota.Cost{Requests: 34, InputTokens: 1}},
		{"exact", [3]quota.Status{st(600, 100, 40)}, 3, quota.Cost{Requests: 20}},
		{"one replica", [3]quota.Status{{}, {}, st(60, 60, 1)}, 1, quota.Cost{OutputTokens: 59}},
		{"no live count", [3]quota.Status{st(60, 60, 1)}, 0, quota.Cost{Requests: 59}},
	} {
		if got := Spent(c.last, c.live); got != c.want {
			t.Errorf("%s: Spent = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// The shares of the live replicas never hold more than the fleet's
// budget had left, for every spent amount and fleet size.
func TestShareNeverExceedsTheWhole(t *testing.T) {
	l := quota.Limits{quota.Requests: {PerMinute: 600, Burst: 100}, quota.OutputTokens: {PerMinute: 10_000}}
	whole, _ := quota.New(l)
	for n := 1; n <= 7; n++ {
		for spent := int64(0); spent <= 100; spent++ {
			whole, _ = quota.New(l)
			whole.Take(t0, quota.Cost{Requests: spent, OutputTokens: 97 * spent})
			last := whole.Status(t0)
			var sum [3]int64
			for range n {
				b, err := Share(l, n, last, t0)
				if err != nil {
					t.Fatal(err)
				}
				st := b.Status(t0)
				for d := range st {
					sum[d] += st[d].Remaining
				}
			}
			for d := range sum {
				if sum[d] > last[d].Remaining {
					t.Fatalf("%d replicas, %d spent: shares hold %d of %s, the fleet had %d", n, spent, sum[d], quota.Dimension(d), last[d].Remaining)
				}
			}
		}
	}
}

func TestShareLimits(t *testing.T) {
	l := quota.Limits{quota.Requests: {PerMinute: 600, Burst: 100}, quota.InputTokens: {PerMinute: 1000}}
	b, err := Share(l, 3, [3]quota.Status{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	st := b.Status(t0)
	if st[0].Limit != 200 || st[0].Burst != 33 || st[1].Limit != 333 || st[1].Burst != 333 || st[2].Limit != 0 {
		t.Fatalf("share of %+v over 3: %+v", l, st)
	}
}

func TestShareVerdict(t *testing.T) {
	l := quota.Limits{quota.Requests: {PerMinute: 600, Burst: 100}, quota.OutputTokens: {PerMinute: 3000}}
	never := quota.Verdict{Dimension: quota.OutputTokens, Never: true}
	wait := quota.Verdict{Dimension: quota.Requests, RetryAfter: 3 * time.Millisecond}
	for _, c := range []struct {
		name string
		v    quota.Verdict
		cost quota.Cost
		want quota.Verdict
	}{
		{"ok stands", quota.Verdict{OK: true}, quota.Cost{Requests: 1}, quota.Verdict{OK: true}},
		{"a wait stands", wait, quota.Cost{Requests: 1}, wait},
		{"beyond the share, within the fleet", never, quota.Cost{Requests: 1, OutputTokens: 2000}, quota.Verdict{Dimension: quota.OutputTokens, RetryAfter: Recheck}},
		{"at the fleet's burst", never, quota.Cost{OutputTokens: 3000}, quota.Verdict{Dimension: quota.OutputTokens, RetryAfter: Recheck}},
		{"beyond the fleet's burst", never, quota.Cost{OutputTokens: 3001}, never},
	} {
		if got := ShareVerdict(c.v, l, c.cost, Recheck); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestSettlement(t *testing.T) {
	res, act := Settlement([3]int64{3, -5, 0})
	if res != (quota.Cost{InputTokens: 5}) || act != (quota.Cost{Requests: 3}) {
		t.Fatalf("Settlement: %+v %+v", res, act)
	}
	// Applied to a budget, it charges and refunds as the signed units say.
	l := quota.Limits{quota.Requests: {PerMinute: 1, Burst: 10}, quota.InputTokens: {PerMinute: 1, Burst: 10}}
	b, _ := quota.New(l)
	b.Take(t0, quota.Cost{InputTokens: 8})
	b.Settle(t0, res, act)
	if st := b.Status(t0); st[0].Remaining != 7 || st[1].Remaining != 7 {
		t.Fatalf("after settling: %+v", st)
	}
}
