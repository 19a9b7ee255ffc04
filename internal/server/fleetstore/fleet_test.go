package fleetstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

func TestMembers(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	const interval = time.Second
	now := t0
	var ms []*Members
	for i := range 3 {
		m := NewMembers(c, MemberOptions{Prefix: prefix, ID: fmt.Sprint("replica-", i), Interval: interval})
		m.now = func() time.Time { return now }
		ms = append(ms, m)
	}
	ctx := context.Background()
	if ms[0].Live() != 1 {
		t.Fatal("Live before any heartbeat is not 1")
	}
	for i, m := range ms {
		if n, err := m.Beat(ctx); err != nil || n != i+1 {
			t.Fatalf("beat %d: %d, %v; want %d", i, n, err, i+1)
		}
	}
	// replica-2 stops beating; 3 intervals later it is out.
	now = now.Add(3 * interval)
	if n, _ := ms[0].Beat(ctx); n != 3 {
		t.Fatalf("at exactly 3 intervals: %d live, want 3", n)
	}
	now = now.Add(time.Millisecond)
	if n, _ := ms[1].Beat(ctx); n != 2 {
		t.Fatalf("after 3 intervals: %d live, want 2", n)
	}
	if ms[0].Live() != 3 || ms[2].Live() != 3 {
		t.Fatal("Live changed without a heartbeat")
	}
	// Close leaves at once.
	if err := ms[1].Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := ms[0].Beat(ctx); n != 1 {
		t.Fatalf("after a replica left: %d live, want 1", n)
	}
}

// TestMembersUnreachable: Live keeps the last count while Redis is gone,
// and heartbeats in the background pick it up again.
func TestMembersUnreachable(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	p := newProxy(t)
	rc := NewClient(p.addr())
	defer rc.Close()
	other := NewMembers(c, MemberOptions{Prefix: prefix, ID: "other", Interval: time.Hour})
	if _, err := other.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := NewMembers(rc, MemberOptions{Prefix: prefix, ID: "me", Interval: 20 * time.Millisecond, Timeout: time.Second})
	m.Start()
	defer m.Close()
	waitFor(t, 5*time.Second, "2 live", func() bool { return m.Live() == 2 })
	p.setDown(true)
	if _, err := m.Beat(context.Background()); err == nil {
		t.Fatal("beat through a cut connection succeeded")
	}
	if m.Live() != 2 {
		t.Fatalf("Live %d with Redis gone, want the last known 2", m.Live())
	}
	p.setDown(false)
	other.Close()
	waitFor(t, 10*time.Second, "1 live after the other left", func() bool { return m.Live() == 1 })
}

func TestLeaseTakeover(t *testing.T) {
	c := redistest.Conn(t)
	l := NewLeases(c, Options{Prefix: redistest.Prefix(t, c), Timeout: time.Second})
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	lease := func(holder string) bool {
		t.Helper()
		held, err := l.Lease(ctx, "probe:openai", holder, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return held
	}
	if !lease("a") {
		t.Fatal("a did not get a free lease")
	}
	if lease("b") {
		t.Fatal("b got a's lease")
	}
	if !lease("a") {
		t.Fatal("a could not renew")
	}
	renewed := time.Now()
	if err := l.Release(ctx, "probe:openai", "b"); err != nil {
		t.Fatal(err)
	}
	// a stops renewing: b gets the lease once ttl has run out.
	for !lease("b") {
		if time.Since(renewed) > ttl+2*time.Second {
			t.Fatal("b never took over")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if took := time.Since(renewed); took < ttl-50*time.Millisecond {
		t.Fatalf("b took over %v after a's renewal, before the ttl %v", took, ttl)
	}
	if lease("a") {
		t.Fatal("a got the lease back while b holds it")
	}
	if err := l.Release(ctx, "probe:openai", "b"); err != nil {
		t.Fatal(err)
	}
	if !lease("a") {
		t.Fatal("a did not get the lease b released")
	}
}

func TestPubSub(t *testing.T) {
	c1, c2 := redistest.Conn(t), redistest.Conn(t)
	prefix := redistest.Prefix(t, c1)
	// The subscriber's connections carry a name of their own, so that
	// cutting them below cuts no other test's (other packages' tests
	// use this Redis's pub/sub at the same time).
	name := "sluice-test-" + strings.ReplaceAll(strings.TrimSuffix(prefix, ":"), ":", "-")
	o := *c1.Options()
	o.ClientName = name
	c1 = redis.NewClient(&o)
	defer c1.Close()
	sub := NewChannels(c1, Options{Prefix: prefix, Timeout: time.Second})
	pub := NewChannels(c2, Options{Prefix: prefix, Timeout: time.Second})
	ctx := context.Background()
	msgs, stop := sub.Subscribe(ctx, "breaker")
	defer stop()
	if err := pub.Publish(ctx, "breaker", []byte("openai:open")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-msgs:
		if string(m) != "openai:open" {
			t.Fatalf("got %q", m)
		}
	case <-time.After(time.Second):
		t.Fatal("no message within 1s")
	}

	// Cut the subscriber's connection: it resubscribes by itself.
	list, err := c2.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				if err := c2.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err == nil {
					killed++
				}
			}
		}
	}
	if killed == 0 {
		t.Fatalf("found no connection named %s to cut:\n%s", name, list)
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := pub.Publish(ctx, "breaker", []byte("again")); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-msgs:
			if string(m) == "again" {
				goto stopped
			}
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatal("no message within 10s after the connection was cut")
		}
	}
stopped:
	stop()
	for range msgs { // closed after stop
	}
}
