package fleetstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// fleetLimit is the shared max_in_flight the join tests split, as
// lifecycle's split does: max(1, limit/live).
const fleetLimit = 10

func shareOf(live int) int { return max(1, fleetLimit/max(1, live)) }

// loadModel is replicas under a saturating load: each keeps as many
// calls in flight as its share allows, every call lasting d, and a call
// admitted under a larger share runs to its end when the share shrinks.
type loadModel struct {
	d     time.Duration
	calls [][]time.Time // per replica: when each call in flight ends
}

// step admits up to each ready replica's share at now and returns the
// fleet's calls in flight.
func (l *loadModel) step(now time.Time, ready []bool, live []int) int {
	total := 0
	for i := range l.calls {
		kept := l.calls[i][:0]
		for _, end := range l.calls[i] {
			if now.Before(end) {
				kept = append(kept, end)
			}
		}
		l.calls[i] = kept
		if ready[i] {
			for len(l.calls[i]) < shareOf(live[i]) {
				l.calls[i] = append(l.calls[i], now.Add(l.d))
			}
		}
		total += len(l.calls[i])
	}
	return total
}

// Replicas started together learn the fleet before they report ready,
// so that under load that starts once they are ready (a load balancer's
// health checks) the fleet never holds more calls than its shared limit.
// Before, each counted itself alone until its first heartbeat, and the
// others learned of it only at their next: 10 + 5 + 3 in flight.
func TestFleetStartTogetherHoldsTheLimit(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	const interval = 300 * time.Millisecond
	var ms []*Members
	var wg sync.WaitGroup
	for i := range 3 {
		m := NewMembers(c, MemberOptions{Prefix: prefix, ID: fmt.Sprint("replica-", i), Interval: interval, Timeout: time.Second})
		ms = append(ms, m)
		t.Cleanup(func() { m.Close() })
	}
	for _, m := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); m.Start() }()
	}
	wg.Wait()
	// Load starts on each replica as it reports ready; it runs until
	// all have been ready for two heartbeat intervals.
	model := &loadModel{d: 2 * interval, calls: make([][]time.Time, len(ms))}
	ready, live := make([]bool, len(ms)), make([]int, len(ms))
	deadline := time.Now().Add(20 * time.Second)
	var allReady time.Time
	peak := 0
	for steps := 0; steps < 100000; steps++ {
		now := time.Now()
		if now.After(deadline) {
			t.Fatalf("replicas not all ready after 20 s: %v", ready)
		}
		all := true
		for i, m := range ms {
			ready[i] = ready[i] || m.Joined()
			live[i] = m.Live()
			all = all && ready[i]
		}
		if n := model.step(now, ready, live); n > peak {
			peak = n
			if n > fleetLimit {
				t.Fatalf("%d calls in flight, the fleet's limit is %d: ready %v, counts %v", n, fleetLimit, ready, live)
			}
		}
		if all && allReady.IsZero() {
			allReady = now
		}
		if !allReady.IsZero() && now.Sub(allReady) > 2*interval {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("peak %d in flight; counts %v", peak, live)
	for i, n := range live {
		if n != 3 {
			t.Errorf("replica %d counts %d live, want 3", i, n)
		}
	}
}

// After Redis restarts empty, or resumes from a stall long enough for
// every entry to age out, the first replica back sees only itself. It
// must not take the whole limit: while the count is uncertain it keeps
// the share of the largest count seen recently (fleet.Census). Before,
// it counted 1 at once, and the fleet's shares added up to 10 + 3 + 3.
func TestFleetStoreBackHoldsTheLimit(t *testing.T) {
	for _, fault := range []string{"restart", "stall"} {
		t.Run(fault, func(t *testing.T) {
			rs := redistest.Own(t)
			const interval = 200 * time.Millisecond
			var ms []*Members
			for i := range 3 {
				rc := NewClient(rs.Addr())
				t.Cleanup(func() { rc.Close() })
				m := NewMembers(rc, MemberOptions{ID: fmt.Sprint("replica-", i), Interval: interval, Timeout: 100 * time.Millisecond})
				m.Start()
				t.Cleanup(func() { m.Close() })
				ms = append(ms, m)
			}
			sum := func() (int, []int) {
				total, lives := 0, make([]int, len(ms))
				for i, m := range ms {
					lives[i] = m.Live()
					total += shareOf(lives[i])
				}
				return total, lives
			}
			waitFor(t, 10*time.Second, "three live on every replica", func() bool {
				for _, m := range ms {
					if m.Seen() != 3 {
						return false
					}
				}
				return true
			})
			switch fault {
			case "restart":
				rs.Kill()
				waitFor(t, 10*time.Second, "every replica to miss a heartbeat", func() bool {
					for _, m := range ms {
						if m.Reached() {
							return false
						}
					}
					return true
				})
				rs.Start()
			case "stall":
				rs.Signal(syscall.SIGSTOP)
				// A stall of 10 intervals, past the liveness window.
				stalled := time.Now()
				waitFor(t, 10*time.Second, "every replica to miss a heartbeat", func() bool {
					for _, m := range ms {
						if m.Reached() {
							return false
						}
					}
					return true
				})
				for time.Since(stalled) < 10*interval {
					if s, lives := sum(); s > fleetLimit {
						t.Fatalf("during the stall the shares add up to %d (counts %v)", s, lives)
					}
					time.Sleep(5 * time.Millisecond)
				}
				rs.Signal(syscall.SIGCONT)
			}
			// From the store's return until every replica has counted
			// three again and 3 intervals more, the shares never add up
			// to more than the limit.
			back := time.Now()
			var settled time.Time
			for steps := 0; steps < 100000; steps++ {
				if time.Since(back) > 20*time.Second {
					t.Fatal("the replicas did not count three again within 20 s")
				}
				s, lives := sum()
				if s > fleetLimit {
					t.Fatalf("%v after the store came back the shares add up to %d (counts %v, last seen %d/%d/%d)",
						time.Since(back).Round(time.Millisecond), s, lives, ms[0].Seen(), ms[1].Seen(), ms[2].Seen())
				}
				all := true
				for _, m := range ms {
					all = all && m.Reached() && m.Seen() == 3
				}
				if all && settled.IsZero() {
					settled = time.Now()
				}
				if !settled.IsZero() && time.Since(settled) > 3*interval {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
}

// An entry scored far in the future (a replica whose clock runs ahead,
// or one written by hand) is neither counted nor kept: otherwise it
// would count as live for ever.
func TestMembersFutureDatedPruned(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	now := t0
	m := NewMembers(c, MemberOptions{Prefix: prefix, ID: "me", Interval: time.Second})
	m.now = func() time.Time { return now }
	ctx := context.Background()
	key := prefix + "members"
	future := float64(now.Add(time.Hour).UnixMilli())
	if err := c.ZAdd(ctx, key, redis.Z{Score: future, Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}
	// A little ahead (within the window) is clock skew, and counts.
	if err := c.ZAdd(ctx, key, redis.Z{Score: float64(now.Add(2 * time.Second).UnixMilli()), Member: "ahead"}).Err(); err != nil {
		t.Fatal(err)
	}
	n, err := m.Beat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("counted %d, want 2 (me and the replica 2 s ahead, not the one an hour ahead)", n)
	}
	if err := c.ZScore(ctx, key, "ghost").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("the future-dated entry is still there (%v)", err)
	}
	// An hour on, only this replica is live: nothing was kept alive by
	// its score.
	now = now.Add(time.Hour)
	if n, _ := m.Beat(ctx); n != 1 {
		t.Errorf("an hour later: %d live, want 1", n)
	}
}

// A members key that someone overwrote with another type breaks the
// count, not the store: Redis answers, so this replica neither says the
// store is unreachable nor stops sharing; it keeps the last count and
// says what is wrong.
func TestMembersWrongType(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	ctx := context.Background()
	var mu sync.Mutex
	var reach []bool
	var keyErrs []error
	other := NewMembers(c, MemberOptions{Prefix: prefix, ID: "other", Interval: time.Hour})
	if _, err := other.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	m := NewMembers(c, MemberOptions{Prefix: prefix, ID: "me", Interval: time.Hour,
		OnReach:    func(ok bool, _ error) { mu.Lock(); reach = append(reach, ok); mu.Unlock() },
		OnKeyError: func(err error) { mu.Lock(); keyErrs = append(keyErrs, err); mu.Unlock() }})
	if n, err := m.Beat(ctx); err != nil || n != 2 {
		t.Fatalf("beat: %d, %v", n, err)
	}
	if err := c.Set(ctx, prefix+"members", "oops", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := m.Beat(ctx)
	if !KeyError(err) {
		t.Fatalf("beat on a string key: %v, want a WRONGTYPE error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reach) != 1 || !reach[0] {
		t.Errorf("reach changes %v: a wrong-typed key must not read as Redis unreachable", reach)
	}
	if len(keyErrs) != 1 {
		t.Errorf("OnKeyError heard %d errors, want 1", len(keyErrs))
	}
	if !m.Reached() || m.Live() != 2 {
		t.Errorf("reached %v, live %d; want reached, and the last count 2", m.Reached(), m.Live())
	}
}

// One budget's key overwritten with another type affects that budget
// alone: Redis answers, so the store stays Shared, the other budgets
// stay the fleet's (exact in Redis), and the broken one is answered by
// this replica's share of it. Before, the first call on it switched the
// whole store to Local, on every replica that touched it.
func TestBudgetWrongTypeKey(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	ctx := context.Background()
	var mu sync.Mutex
	var modes []Mode
	var broken []string
	b := NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: time.Second, Replicas: func() int { return 2 },
		OnMode:     func(m Mode, _ error) { mu.Lock(); modes = append(modes, m); mu.Unlock() },
		OnKeyError: func(name string, _ error) { mu.Lock(); broken = append(broken, name); mu.Unlock() }})
	defer b.Close()
	l := quota.Limits{quota.Requests: {PerMinute: 60, Burst: 10}}
	if err := c.Set(ctx, b.Key("bad"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The broken budget: this replica's share, 10/2 = 5 at once.
	ok := 0
	for range 10 {
		v, _, err := b.Take(ctx, "bad", l, quota.Cost{Requests: 1})
		if err != nil {
			t.Fatal(err)
		}
		if v.OK {
			ok++
		}
	}
	if ok != 5 {
		t.Errorf("the broken budget admitted %d of 10, want its share, 5", ok)
	}
	if b.Mode() != Shared {
		t.Fatalf("one wrong-typed key switched the store to %v", b.Mode())
	}
	// Another budget is still the fleet's, in Redis.
	if v, _, err := b.Take(ctx, "good", l, quota.Cost{Requests: 3}); err != nil || !v.OK {
		t.Fatalf("the other budget: %+v, %v", v, err)
	}
	if n, err := c.Exists(ctx, b.Key("good")).Result(); err != nil || n != 1 {
		t.Errorf("the other budget is not in Redis (%d, %v)", n, err)
	}
	if st, err := b.Status(ctx, "good", l); err != nil || st[quota.Requests].Remaining != 7 {
		t.Errorf("the other budget's status: %+v, %v; want 7 remaining of 10", st[quota.Requests], err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(modes) != 0 {
		t.Errorf("mode switches %v, want none", modes)
	}
	if len(broken) == 0 || broken[0] != "bad" {
		t.Errorf("OnKeyError heard %v, want the bad budget", broken)
	}
}
