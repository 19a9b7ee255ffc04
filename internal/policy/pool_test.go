package policy

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/pool"
)

// poolEngine is built from a config, as the gateway and the simulator
// build theirs: a pool of three replicas of two calls each, with
// metrics, and a backup provider behind it.
func poolEngine(t *testing.T, extra string) *lifecycle.Engine {
	t.Helper()
	yaml := `
providers:
  - name: vllm
    kind: openai
    max_in_flight: 2
    replicas:
      - {base_url: "http://127.0.0.1:1/v1", metrics_url: "http://127.0.0.1:1/metrics"}
      - {base_url: "http://127.0.0.1:2/v1", metrics_url: "http://127.0.0.1:2/metrics"}
      - {base_url: "http://127.0.0.1:3/v1", metrics_url: "http://127.0.0.1:3/metrics"}
` + extra + `
  - name: backup
    kind: openai
    base_url: http://127.0.0.1:4/v1
models:
  - name: chat
    targets: [{provider: vllm, model: llama}, {provider: backup, model: llama}]
admission:
  max_in_flight: 100
`
	cfg, err := config.Parse([]byte(yaml), "pool.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	ec, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lifecycle.New(ec)
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func chat(now time.Time) lifecycle.Request {
	return lifecycle.Request{Targets: []int{0, 1}, Models: []string{"llama", "llama"}, Deadline: now.Add(time.Minute)}
}

func TestPoolSpreadsCallsAndLimitsAtTheSum(t *testing.T) {
	e := poolEngine(t, "")
	if l := e.ScopeLimit(0); l != 6 {
		t.Fatalf("pool limit %d, want 6 (three replicas of 2)", l)
	}
	var ids []lifecycle.ID
	per := map[int]int{}
	for range 6 {
		a, _ := e.Arrive(t0, chat(t0))
		if a.Verdict != admission.Admitted || a.Target != 0 {
			t.Fatalf("verdict %v target %d, want admitted to the pool", a.Verdict, a.Target)
		}
		r, ok := e.Replica(a.ID, 0)
		if !ok {
			t.Fatal("no replica for a started call on a pool")
		}
		per[r]++
		ids = append(ids, a.ID)
	}
	if per[0] != 2 || per[1] != 2 || per[2] != 2 {
		t.Errorf("calls per replica %v, want two each", per)
	}
	a, _ := e.Arrive(t0, chat(t0))
	if a.Verdict != admission.Queued {
		t.Fatalf("seventh call: verdict %v, want queued at the pool's limit", a.Verdict)
	}
	if _, ok := e.Replica(a.ID, 0); ok {
		t.Error("a waiting request has a replica: it must be picked when it starts")
	}
	// The first call ends: the waiter starts on the replica it freed.
	freed, _ := e.Replica(ids[0], 0)
	rd, _ := e.Finish(at(time.Second), ids[0], lifecycle.Outcome{Kind: lifecycle.OK})
	if len(rd.Start) != 1 || rd.Start[0] != a.ID {
		t.Fatalf("started %v, want the waiter", rd.Start)
	}
	if r, _ := e.Replica(a.ID, 0); r != freed {
		t.Errorf("the waiter went to replica %d, want %d, the one with room", r, freed)
	}
	if st := e.PoolStats(at(time.Second), 0); st[freed].InFlight != 2 {
		t.Errorf("replica %d in flight %d, want 2", freed, st[freed].InFlight)
	}
}

func TestPoolDrainsAReplicaWithALongQueue(t *testing.T) {
	e := poolEngine(t, "")
	for i := range 3 {
		e.Observe(t0, 0, i, pool.Load{Running: 1})
	}
	e.Observe(t0, 0, 1, pool.Load{Running: 2, Waiting: 6})
	if l := e.ScopeLimit(0); l != 4 {
		t.Errorf("limit %d, want 4: the drained replica's two leave the pool's", l)
	}
	for range 4 {
		a, _ := e.Arrive(t0, chat(t0))
		if r, _ := e.Replica(a.ID, 0); r == 1 {
			t.Fatal("a call went to the replica drained for its queue")
		}
	}
	// It drains: a scrape that shows it so puts it back, and its room
	// goes to the next arrivals.
	e.Observe(at(time.Second), 0, 1, pool.Load{Running: 1})
	a, _ := e.Arrive(at(time.Second), chat(at(time.Second)))
	if r, _ := e.Replica(a.ID, 0); a.Verdict != admission.Admitted || r != 1 {
		t.Errorf("after its queue drained: verdict %v replica %d, want admitted to 1", a.Verdict, r)
	}
}

func TestPoolWithNoReplicaLeftFailsOver(t *testing.T) {
	e := poolEngine(t, "    pool: {scrape_interval: 1s, stale_after: 3s}\n")
	for i := range 3 {
		e.Observe(t0, 0, i, pool.Load{})
	}
	// Every replica's metrics go silent: the pool is out of rotation,
	// and the model's next target serves.
	now := at(4 * time.Second)
	a, _ := e.Arrive(now, chat(now))
	if a.Verdict != admission.Admitted || a.Target != 1 {
		t.Fatalf("verdict %v target %d, want admitted to the backup", a.Verdict, a.Target)
	}
	if _, ok := e.Replica(a.ID, 0); ok {
		t.Error("a call on a provider of one server has a replica")
	}
	e.Observe(at(5*time.Second), 0, 2, pool.Load{})
	a, _ = e.Arrive(at(5*time.Second), chat(at(5*time.Second)))
	if r, _ := e.Replica(a.ID, 0); a.Target != 0 || r != 2 {
		t.Errorf("target %d replica %d, want the pool's one live replica, 2", a.Target, r)
	}
}

func TestPoolReplicaBreakerTripsAlone(t *testing.T) {
	e := poolEngine(t, "    breaker: {min_calls: 4, error_rate: 0.5, window: 10s}\n")
	now := t0
	tripped := false
	for k := range 30 {
		a, _ := e.Arrive(now, chat(now))
		r, _ := e.Replica(a.ID, 0)
		o := lifecycle.Outcome{Kind: lifecycle.OK}
		if r == 0 {
			o = lifecycle.Outcome{Kind: lifecycle.Failed, Status: 500}
		}
		rd, _ := e.Finish(now.Add(50*time.Millisecond), a.ID, o)
		for _, tr := range rd.Transitions {
			if tr.Scope == 0 && tr.Replica == 1 && tr.To.String() == "open" {
				tripped = true
			}
			if tr.Replica == 0 && tr.Scope == 0 {
				t.Errorf("call %d: the pool itself has a breaker transition %+v", k, tr)
			}
		}
		now = now.Add(100 * time.Millisecond)
	}
	if !tripped {
		t.Fatal("replica 1's breaker never reported opening")
	}
	for range 6 {
		a, _ := e.Arrive(now, chat(now))
		if r, _ := e.Replica(a.ID, 0); a.Target != 0 || r == 0 {
			t.Fatalf("target %d replica %d: want the pool, not its tripped replica", a.Target, r)
		}
		e.Finish(now, a.ID, lifecycle.Outcome{Kind: lifecycle.OK})
	}
}

// When the pool's last replica goes stale, with no call ending to
// notice it, the engine's timer does: its waiters move to the model's
// next target.
func TestPoolGoingStaleMovesItsWaiters(t *testing.T) {
	e := poolEngine(t, "    pool: {scrape_interval: 1s, stale_after: 3s}\n")
	for i := range 3 {
		e.Observe(t0, 0, i, pool.Load{})
	}
	for range 6 {
		e.Arrive(t0, chat(t0))
	}
	a, _ := e.Arrive(t0, chat(t0))
	if a.Verdict != admission.Queued {
		t.Fatalf("verdict %v, want queued at the pool's limit", a.Verdict)
	}
	next, ok := e.NextTimer()
	if !ok || next.After(at(3*time.Second+time.Millisecond)) {
		t.Fatalf("next timer %v, %v; want when the metrics go stale, 3 s in", next.Sub(t0), ok)
	}
	rd := e.Tick(next)
	if len(rd.Start) != 1 || rd.Start[0] != a.ID {
		t.Fatalf("started %v, want the waiter, moved on", rd.Start)
	}
	if tg, _ := e.Target(a.ID); tg != 1 {
		t.Errorf("the waiter is on target %d, want the backup", tg)
	}
}

// A model whose only target is a pool retries a call that could not
// connect on another replica: the dead one, emptied at once by its
// refusals, is the least loaded, and least-loaded alone would send the
// retry straight back to it (sluice chaos's replica-killed-mid-stream
// row answered such calls 502 while a live replica had room).
func TestPoolRetriesOnAnotherReplica(t *testing.T) {
	cfg, err := config.Parse([]byte(`
providers:
  - name: vllm
    kind: openai
    replicas: [{base_url: "http://127.0.0.1:1/v1"}, {base_url: "http://127.0.0.1:2/v1"}]
models:
  - {name: chat, targets: [{provider: vllm, model: llama}]}
`), "pool.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	ec, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := lifecycle.New(ec)
	req := lifecycle.Request{Targets: []int{0}, Models: []string{"llama"}, Deadline: t0.Add(time.Minute)}
	// Calls take turns: two on the live replica, and between them this
	// one on the dead replica, which is then the less loaded.
	busy, _ := e.Arrive(t0, req)
	a, _ := e.Arrive(t0, req)
	e.Arrive(t0, req)
	live, _ := e.Replica(busy.ID, 0)
	dead, _ := e.Replica(a.ID, 0)
	if live == dead {
		t.Fatalf("both calls on replica %d; the test needs one on each", live)
	}
	if _, _, ok := e.Retry(t0, a.ID, lifecycle.Outcome{Kind: lifecycle.ConnError}); !ok {
		t.Fatal("a connection error was not retried")
	}
	if r, ok := e.Replica(a.ID, 1); !ok || r != live {
		t.Errorf("the retry went to replica %d (ok %v), want %d: the dead replica %d is not where it goes", r, ok, live, dead)
	}
}
