package fleetstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// The heartbeat writes the fleet's epoch and reads it back each beat: a
// replica whose heartbeat finds it missing or changed hears of it once
// (OnLoss, old and new), and the first to find it marks it lost with
// Redis's time, which the other parts of a replica wait from.
func TestHeartbeatSeesTheEpochLost(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	ctx := context.Background()
	var mu sync.Mutex
	var seen [][2]string
	m := NewMembers(c, MemberOptions{Prefix: prefix, ID: "me", Interval: time.Hour,
		OnLoss: func(old, new string) { mu.Lock(); seen = append(seen, [2]string{old, new}); mu.Unlock() }})
	if _, err := m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	first := m.Epoch()
	if first == "" || c.HGet(ctx, EpochKey(prefix), "id").Val() != first {
		t.Fatalf("the first beat left epoch %q, Redis holds %q", first, c.HGet(ctx, EpochKey(prefix), "id").Val())
	}
	m.Beat(ctx)
	// Redis loses its data.
	redistest.Flush(c, prefix)
	if _, err := m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	m.Beat(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0][0] != first || seen[0][1] == first || seen[0][1] != m.Epoch() {
		t.Fatalf("OnLoss heard %v, want once, from %s to the new epoch %s", seen, first, m.Epoch())
	}
	if lost, _ := c.HGet(ctx, EpochKey(prefix), "lost").Int64(); lost == 0 {
		t.Error("the new epoch is not marked lost")
	}
	// A replica that never knew the old epoch (it started after the
	// loss) cannot tell, and does not say so.
	var fresh int
	n := NewMembers(c, MemberOptions{Prefix: prefix, ID: "new", Interval: time.Hour, OnLoss: func(string, string) { fresh++ }})
	n.Beat(ctx)
	n.Beat(ctx)
	if fresh != 0 || n.Epoch() != m.Epoch() {
		t.Errorf("a new replica heard %d losses and knows epoch %q; want none, and %q", fresh, n.Epoch(), m.Epoch())
	}
}

// Every heartbeat that misses is heard (OnError), not only the first of
// an outage (OnReach), so an outage that only the heartbeat sees can be
// counted.
func TestHeartbeatErrorsHeardEachTime(t *testing.T) {
	rc := NewClient(redistest.Silent(t))
	defer rc.Close()
	var errs, changes int
	m := NewMembers(rc, MemberOptions{Prefix: "sluicetest:silent:", ID: "me", Interval: time.Hour, Timeout: 20 * time.Millisecond,
		OnError: func(error) { errs++ }, OnReach: func(bool, error) { changes++ }})
	for range 3 {
		if _, err := m.Beat(context.Background()); err == nil {
			t.Fatal("a beat to a Redis that never answers succeeded")
		}
	}
	// OnReach hears changes only, and a replica that never reached
	// Redis has none to hear.
	if errs != 3 || changes != 0 {
		t.Errorf("OnError heard %d misses and OnReach %d changes; want 3 and 0", errs, changes)
	}
}

// A string written where the epoch hash belongs breaks the epoch alone:
// the count is kept and the heartbeat reaches Redis.
func TestHeartbeatEpochWrongType(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	ctx := context.Background()
	var keyErrs int
	m := NewMembers(c, MemberOptions{Prefix: prefix, ID: "me", Interval: time.Hour, OnKeyError: func(error) { keyErrs++ }})
	c.Set(ctx, EpochKey(prefix), "oops", 0)
	if n, err := m.Beat(ctx); err != nil || n != 1 {
		t.Fatalf("beat with a wrong-typed epoch: %d, %v; want 1 and no error", n, err)
	}
	if keyErrs != 1 || !m.Reached() {
		t.Errorf("OnKeyError heard %d, reached %v; want 1 and reached", keyErrs, m.Reached())
	}
}
