package spendstore

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/spend"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

var (
	t0     = time.Now()
	limits = []spend.Limit{
		{Scope: "key", Name: "k", Window: spend.Daily, Amount: 10_000},
		{Scope: "team", Name: "t", Window: spend.Rolling, Span: time.Hour, Amount: 25_000},
	}
)

// exercise drives a store through a limit: it admits while under,
// refuses at the limit naming it, and a settlement's refund admits
// again.
func exercise(t *testing.T, s Store) {
	ctx := context.Background()
	needs := spend.Plan(limits, t0, nil)
	admitted := 0
	for i := range 20 {
		tot, r, err := s.Reserve(ctx, needs, 3000)
		if err != nil {
			t.Fatal(err)
		}
		if r != nil {
			if admitted != 4 || r.Limit != limits[0] || r.Spent != 12000 {
				t.Fatalf("refused after %d with %+v; want after 4 (0, 3000, 6000, 9000 are under 10000), key's, 12000 spent", admitted, r)
			}
			if tot.Sum(0) != 12000 {
				t.Fatalf("totals %v", tot)
			}
			break
		}
		admitted++
		if i > 10 {
			t.Fatal("never refused")
		}
	}
	// The last request used 500 of its 3000: the key is at 9500, under.
	if err := s.Adjust(ctx, []spend.Bucket{needs[0].Reserve, needs[1].Reserve}, 500-3000); err != nil {
		t.Fatal(err)
	}
	tot, err := s.Read(ctx, needs)
	if err != nil || tot.Sum(0) != 9500 || tot.Sum(1) != 9500 {
		t.Fatalf("after settling: %v %v", tot, err)
	}
	if _, r, _ := s.Reserve(ctx, needs, 3000); r != nil {
		t.Fatalf("refused at 9500 of 10000: %+v", r)
	}
	if _, r, _ := s.Reserve(ctx, needs, 1); r == nil {
		t.Fatal("admitted at 12500 of 10000")
	}
	// A settlement never takes a counter below zero.
	s.Adjust(ctx, []spend.Bucket{needs[0].Reserve}, -1e9)
	if tot, _ := s.Read(ctx, needs); tot.Sum(0) != 0 {
		t.Fatalf("below zero: %v", tot)
	}
}

func TestMemoryStore(t *testing.T) { exercise(t, NewMemory()) }

// The file store carries spend over a restart (a reopen), and a torn
// last line is skipped.
func TestFileStore(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, f)
	needs := spend.Plan(limits, t0, nil)
	f.Reserve(context.Background(), needs, 7000)
	f.Close()
	j, _ := os.OpenFile(dir+"/"+FileName, os.O_WRONLY|os.O_APPEND, 0)
	j.WriteString("key:k:d:torn 12")
	j.Close()
	g, err := OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tot, _ := g.Read(context.Background(), needs)
	if tot.Sum(0) != 7000 {
		t.Fatalf("after a restart the key has %d spent, want 7000", tot.Sum(0))
	}
	if _, r, _ := g.Reserve(context.Background(), needs, 5000); r != nil {
		t.Fatal("refused under the limit after a restart")
	}
	if _, r, _ := g.Reserve(context.Background(), needs, 1); r == nil {
		t.Fatal("a restart granted a fresh allowance")
	}
	data, _ := os.ReadFile(dir + "/" + FileName)
	if strings.Contains(string(data), "torn") {
		t.Fatal("the torn line survived compaction")
	}
}

func TestRedisStore(t *testing.T) {
	c, p := redistest.Client(t)
	s := NewRedis(c, RedisOptions{Prefix: p, Timeout: 2 * time.Second})
	defer s.Close()
	exercise(t, s)
	// Counters expire with their window.
	ttl := c.PTTL(context.Background(), p+"spend:"+spend.Plan(limits, t0, nil)[0].Reserve.ID).Val()
	if ttl <= 0 || ttl > 49*time.Hour {
		t.Fatalf("a daily counter's TTL is %v", ttl)
	}
}

// Redis losing its data grants no fresh allowance: once a replica that
// knew the old data sees the loss, reservations wait while every live
// replica re-seeds what it knew, and then go on from the highest.
func TestRedisLossReseeds(t *testing.T) {
	c, p := redistest.Client(t)
	ctx := context.Background()
	o := RedisOptions{Prefix: p, Timeout: 2 * time.Second, SyncEvery: 50 * time.Millisecond, Settle: 400 * time.Millisecond}
	a, b := NewRedis(c, o), NewRedis(c, o)
	defer a.Close()
	defer b.Close()
	needs := spend.Plan(limits, t0, nil)
	a.Reserve(ctx, needs, 4000)
	b.Reserve(ctx, needs, 4000) // b saw 8000
	redistest.Flush(c, p)
	// A replica that never knew anything cannot tell a loss: it starts
	// the new epoch.
	fresh := NewRedis(c, o)
	defer fresh.Close()
	if tot, r, _ := fresh.Reserve(ctx, needs, 1); r != nil || tot.Sum(0) != 1 {
		t.Fatalf("a replica with no memory: %v %+v", tot, r)
	}
	// a knew the old epoch: the loss is seen, a waits for the settling
	// time, by which b's sync has merged in the 8000 it saw: the highest
	// total remembered, plus what was spent since (fresh's 1, a's 1000).
	start := time.Now()
	tot, r, _ := a.Reserve(ctx, needs, 1000)
	if r != nil || tot.Sum(0) != 9001 {
		t.Fatalf("a after the loss: %v %+v, want 8000 re-seeded + 1 + 1000", tot, r)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("a did not wait for the fleet to re-seed (%v)", waited)
	}
	if tot, r, _ = b.Reserve(ctx, needs, 1000); r != nil || tot.Sum(0) != 10001 {
		t.Fatalf("b: %v %+v, want 10001", tot, r)
	}
	if _, r, _ = a.Reserve(ctx, needs, 1); r == nil {
		t.Fatal("admitted at the limit after a loss")
	}
	// A second loss is told from the first.
	redistest.Flush(c, p)
	if _, r, _ = a.Reserve(ctx, needs, 1); r == nil {
		t.Fatal("a second loss granted a fresh allowance")
	}
}

// With Redis gone, a replica decides from memory and sends what it
// reserved meanwhile once Redis answers. One call finds Redis gone; the
// requests after it decide alone at once, rather than each waiting out
// the timeout (before, every request of an
// outage waited up to the timeout for Redis first), until the sync
// loop's ping is answered.
func TestRedisUnreachable(t *testing.T) {
	c, p := redistest.Client(t)
	ctx := context.Background()
	var errs int
	s := NewRedis(c, RedisOptions{Prefix: p, Timeout: 200 * time.Millisecond, SyncEvery: time.Hour, OnError: func(error) { errs++ }})
	defer s.Close()
	needs := spend.Plan(limits, t0, nil)
	s.Reserve(ctx, needs, 6000)
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer dead.Close()
	s.rdb = dead
	for _, at := range []int{6000, 9000} {
		if _, r, _ := s.Reserve(ctx, needs, 3000); r != nil {
			t.Fatalf("refused at %d of 10000 alone", at)
		}
	}
	if _, r, _ := s.Reserve(ctx, needs, 3000); r == nil || errs != 1 {
		t.Fatalf("alone at 12000 of 10000: admitted (%+v), after %d failed calls, want 1 (the rest decided at once)", r, errs)
	}
	s.Adjust(ctx, []spend.Bucket{needs[0].Reserve}, -1000)
	if errs != 1 {
		t.Fatalf("a refund while Redis is away made a call: %d failed calls", errs)
	}
	s.rdb = c
	// Still away: a request decides alone, sending nothing.
	if _, _, _ = s.Reserve(ctx, needs, price.Micros(0)); errs != 1 || !s.away() {
		t.Fatalf("a request asked Redis while away: %d failed calls", errs)
	}
	// The sync loop's ping is answered; the next call sends the
	// 6000 - 1000 kept meanwhile.
	if !s.ping() {
		t.Fatal("Redis did not answer the ping")
	}
	tot, _, _ := s.Reserve(ctx, needs, price.Micros(0))
	if tot.Sum(0) != 11000 {
		t.Fatalf("after Redis came back: %v, want 11000", tot)
	}
	if v, _ := c.Get(ctx, s.Key(needs[0].Reserve.ID)).Int64(); v != 11000 {
		t.Fatalf("Redis holds %d", v)
	}
}

// A Redis that stops answering (paused) costs one timeout, not one per
// request; the sync loop pings it meanwhile (pings, not changes: a
// change that timed out still runs when Redis resumes, and one sent
// again would count twice), and its first answer ends the spell.
func TestRedisAwayDecidesAtOnce(t *testing.T) {
	own := redistest.Own(t)
	c := fleetstore.NewClient(own.Addr()) // as the gateway's: calls bounded by their context
	defer c.Close()
	p := redistest.Prefix(t, c)
	ctx := context.Background()
	const timeout = 300 * time.Millisecond
	s := NewRedis(c, RedisOptions{Prefix: p, Timeout: timeout, SyncEvery: 20 * time.Millisecond})
	defer s.Close()
	needs := spend.Plan(limits, t0, nil)
	s.Reserve(ctx, needs, 1000)
	own.Signal(syscall.SIGSTOP)
	begin := time.Now()
	for range 20 {
		if _, r, _ := s.Reserve(ctx, needs, 100); r != nil {
			t.Fatalf("refused alone with 1000 of 10000 spent: %+v", r)
		}
	}
	// The sync loop may have found Redis away first; either way one
	// timeout at most was waited on the request path.
	if d := time.Since(begin); d >= 2*timeout {
		t.Fatalf("20 reservations with Redis paused took %v: more than one timeout (%v)", d, timeout)
	}
	if !s.away() {
		t.Fatal("not away after a call Redis did not answer")
	}
	own.Signal(syscall.SIGCONT)
	// The sync loop pings every 20 ms; the first answer ends the spell.
	deadline := time.Now().Add(10 * time.Second)
	for s.away() {
		if time.Now().After(deadline) {
			t.Fatal("still away 10 s after Redis came back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The call that timed out reached Redis before the pause and runs
	// when it continues, on top of its kept twin: at most one
	// reservation's amount over, toward spent.
	if v, _ := c.Get(ctx, s.Key(needs[0].Reserve.ID)).Int64(); v < 3000 || v > 3100 {
		t.Errorf("Redis holds %d, want 3000 (1000 and the 20 × 100 reserved alone), or 3100", v)
	}
}

// A replica's memory of a bucket is the latest total Redis told it,
// whatever order concurrent calls' answers arrive in: an answer that
// arrives after a later one does not lower it. So after a loss of
// Redis's data it re-seeds what it last knew was spent, not an older
// total. Before, the last answer to arrive won, and a replica could
// re-seed less than it had seen (by the reservations answered in
// between).
func TestRedisMemoryKeepsTheLatestTotal(t *testing.T) {
	c, p := redistest.Client(t)
	ctx := context.Background()
	o := RedisOptions{Prefix: p, Timeout: 2 * time.Second, SyncEvery: time.Hour, Settle: 50 * time.Millisecond}
	s := NewRedis(c, o)
	defer s.Close()
	needs := spend.Plan(limits, t0, nil)
	for range 3 {
		s.Reserve(ctx, needs, 1000)
	}
	// Two calls' answers, the later (seq 2 more) learnt first.
	b := needs[0].Reserve
	s.mu.Lock()
	k := s.known[b.ID]
	epoch, seq := k.epoch, k.seq
	s.learn(b, 5000, epoch, seq+2, 0)
	s.learn(b, 4000, epoch, seq+1, 0)
	s.mu.Unlock()
	redistest.Flush(c, p)
	tot, r, _ := s.Reserve(ctx, needs, 1000)
	if r != nil || tot.Sum(0) != 6000 {
		t.Fatalf("after the loss: %v %+v, want the latest total seen (5000) re-seeded + 1000", tot, r)
	}
}

// Deciding alone, a replica spends only its share of the headroom it
// last saw: one of three, with 4000 of 10000 spent when Redis went, it
// admits 1000s while 4000 + 3 × its own spend since is under 10000 (2 of
// them). Three such replicas admit 6000 together: the headroom, not
// three times it. Before, each admitted the whole 6000 alone, and the
// fleet 18000.
func TestRedisAloneSpendsItsShare(t *testing.T) {
	c, p := redistest.Client(t)
	ctx := context.Background()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer dead.Close()
	needs := spend.Plan(limits, t0, nil)
	var fleet []*Redis
	for range 3 {
		s := NewRedis(c, RedisOptions{Prefix: p, Timeout: 200 * time.Millisecond, SyncEvery: time.Hour, Replicas: func() int { return 3 }})
		defer s.Close()
		fleet = append(fleet, s)
	}
	fleet[0].Reserve(ctx, needs, 4000)
	for _, s := range fleet {
		s.Reserve(ctx, needs, 0) // each has seen the 4000
		s.rdb = dead
	}
	admitted := 0
	var last *spend.Refusal
	for round := 0; round < 10; round++ {
		for _, s := range fleet {
			if _, r, _ := s.Reserve(ctx, needs, 1000); r == nil {
				admitted++
			} else {
				last = r
			}
		}
	}
	if admitted != 6 {
		t.Errorf("three replicas alone admitted %d of 1000 on 4000 of 10000 spent; want 6 (2 each: the headroom shared)", admitted)
	}
	if last == nil || last.Spent < last.Limit.Amount {
		t.Errorf("a share's refusal says %+v: what it counts spent must reach the limit", last)
	}
	for _, s := range fleet {
		s.rdb = c
		s.ping() // the sync loop's, then its call
		s.Adjust(ctx, []spend.Bucket{needs[0].Reserve, needs[1].Reserve}, 0)
	}
	if v, _ := c.Get(ctx, fleet[0].Key(needs[0].Reserve.ID)).Int64(); v != 10000 {
		t.Errorf("Redis holds %d once back, want 10000 (4000 and the 6000 admitted alone)", v)
	}
}

// After a loss the counter is the highest total any replica remembers
// plus everything each added since, in whatever order their calls
// arrive: a replica that saw a higher total before the loss does not
// swallow what another spent alone meanwhile. Here a saw 3000 and then
// spent 1000 alone; c saw 6000. Redis comes back empty, a's call lands
// first (3000 + 1000), c's memory then adds only what it knew beyond
// a's: 7000, what was spent. Before, c's memory raised the counter to
// 6000, and a's 1000 was lost: the fleet could spend it again.
func TestRedisLossMergesWhatEachReplicaKnew(t *testing.T) {
	c, p := redistest.Client(t)
	ctx := context.Background()
	o := RedisOptions{Prefix: p, Timeout: 200 * time.Millisecond, SyncEvery: time.Hour, Settle: 10 * time.Millisecond}
	a, b := NewRedis(c, o), NewRedis(c, o)
	defer a.Close()
	defer b.Close()
	needs := spend.Plan(limits, t0, nil)
	a.Reserve(ctx, needs, 3000) // a saw 3000
	b.Reserve(ctx, needs, 3000) // b saw 6000
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer dead.Close()
	a.rdb = dead
	if _, r, _ := a.Reserve(ctx, needs, 1000); r != nil {
		t.Fatalf("a alone at 3000 of 10000: %+v", r)
	}
	redistest.Flush(c, p) // Redis restarted empty meanwhile
	a.rdb = c
	// Each replica's sync loop sends what it knows (a's pings first:
	// its last call found Redis away).
	a.ping()
	a.Adjust(ctx, []spend.Bucket{needs[0].Reserve}, 0)
	b.Adjust(ctx, []spend.Bucket{needs[0].Reserve}, 0)
	a.Adjust(ctx, []spend.Bucket{needs[0].Reserve}, 0) // again: nothing more
	if v, _ := c.Get(ctx, a.Key(needs[0].Reserve.ID)).Int64(); v != 7000 {
		t.Fatalf("the counter after the loss holds %d, want 7000 (6000 seen + 1000 spent alone)", v)
	}
}
