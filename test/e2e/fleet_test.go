package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/procs"
	"github.com/sluice-gw/sluice/internal/sim/report"
)

// fleetConfig is one replica's: a fast provider for budgets, and one
// that fails every call, for the breaker.
const fleetConfig = `
listen: ${LISTEN}
admin_listen: ${ADMIN}
store: redis://${REDIS}/0
fleet: {id: ${ID}, timeout: 250ms} # a loaded CI machine, not a fleet's budget
providers:
  - {name: fast, kind: openai, base_url: http://${FAST}/v1, max_in_flight: 60}
  - {name: down, kind: openai, base_url: http://${DOWN}/v1}
models:
  - {name: chat, targets: [{provider: fast, model: m}]}
  - {name: doomed, targets: [{provider: down, model: m}]}
keys:
  - {name: rpm, sha256: ${RPMHASH}, limits: {rpm: 1200}}
  - {name: itpm, sha256: ${ITPMHASH}, limits: {itpm: 3000}}
  - {name: open, sha256: ${OPENHASH}}
  - {name: load, sha256: ${LOADHASH}, limits: {rpm: 600}}
`

// fleetLoad is sluice load's scenario for the fleet: one key, sent to
// every replica in turn, at six times its budget's rate.
const fleetLoad = `
providers:
  - {name: fast, kind: openai, base_url: http://127.0.0.1:1/v1}
models:
  - {name: chat, targets: [{provider: fast, model: m}]}
keys:
  - {name: load, sha256: ${LOADHASH}}
scenario:
  name: fleet-load
  seed: 1
  duration: 3s
  keys: {load: sk-fleet-load}
  clients: {model: chat, key: load, rate: [{at: 0s, rps: 60}], patience: 5s}
  upstreams:
    fast: {}
`

// replica is one sluice serve process of the fleet.
type replica struct {
	listen, admin string
	proc          *procs.Proc
}

// metric sums the replica's series that start with prefix, or is -1
// when its admin listener does not answer.
func (r *replica) metric(t *testing.T, prefix string) float64 {
	t.Helper()
	v, err := metricSum(r.admin, prefix)
	if err != nil {
		return -1
	}
	return v
}

// redisProcess runs a Redis of the test's own on addr, keeping nothing.
// The test kills it mid-run and restarts it (Restart) on the same port;
// whichever is running at the end is killed.
func redisProcess(t *testing.T, addr string) *procs.Proc {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("the fleet e2e test runs its own Redis and needs redis-server (apt-get install redis-server): %v", err)
	}
	_, port, _ := strings.Cut(addr, ":")
	return runUntilEnd(t, procs.Spec{Name: "redis-server", Path: bin, Args: []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"},
		Ready: procs.TCPOpen(addr), ReadyWithin: 5 * time.Second, StopSignal: syscall.SIGKILL})
}

// Three sluice serve replicas sharing one Redis make one set of
// decisions: together they admit one key's budget in requests and in
// tokens; a provider failing behind one of them leaves rotation on all
// three within a second; one probes it, and another takes over when
// that one dies; and with Redis killed mid-run nothing is lost, and its
// return makes the budgets shared again.
func TestFleetInRealProcesses(t *testing.T) {
	bin := buildSluice(t)
	redisAddr := freeAddr(t)
	rc := redisProcess(t, redisAddr)
	fast, down := freeAddr(t), freeAddr(t)
	mocks := []*procs.Proc{
		start(t, nil, bin, "mock", "--listen", fast, "--ttft", "2ms", "--tpot", "0s", "--output-tokens", "4"),
		start(t, nil, bin, "mock", "--listen", down, "--fail-rate", "1"),
	}
	await(t, mocks[0], 10*time.Second, ready("http://"+fast+"/stats"))
	await(t, mocks[1], 10*time.Second, ready("http://"+down+"/stats"))

	keys := map[string]string{"rpm": "sk-fleet-rpm", "itpm": "sk-fleet-itpm", "open": "sk-fleet-open", "load": "sk-fleet-load"}
	var fleet []*replica
	for i := range 3 {
		r := &replica{listen: freeAddr(t), admin: freeAddr(t)}
		text := strings.NewReplacer("${LISTEN}", r.listen, "${ADMIN}", r.admin, "${REDIS}", redisAddr,
			"${ID}", fmt.Sprintf("r%d", i), "${FAST}", fast, "${DOWN}", down,
			"${RPMHASH}", config.KeyHash(keys["rpm"]), "${ITPMHASH}", config.KeyHash(keys["itpm"]), "${OPENHASH}", config.KeyHash(keys["open"]), "${LOADHASH}", config.KeyHash(keys["load"])).Replace(fleetConfig)
		path := filepath.Join(t.TempDir(), "sluice.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		// One is killed mid-run; those running at the end are killed.
		r.proc = runUntilEnd(t, procs.Spec{Path: bin, Args: []string{"serve", "--config", path}, StopSignal: syscall.SIGKILL})
		fleet = append(fleet, r)
	}
	for _, r := range fleet {
		await(t, r.proc, 10*time.Second, ready("http://"+r.admin+"/readyz"))
	}
	waitUntil(t, 5*time.Second, "every replica to see three live", func() bool {
		for _, r := range fleet {
			if r.metric(t, "sluice_fleet_replicas") != 3 {
				return false
			}
		}
		return true
	})

	post := func(r *replica, key, model, body string, hdr map[string]string) int {
		if body == "" {
			body = `{"model":"` + model + `","messages":[{"role":"user","content":"hello there, fleet"}]}`
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.listen+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("budgets are the fleet's", func(t *testing.T) {
		type tally struct {
			ok, refused, other atomic.Int64
			mu                 sync.Mutex
			first, last        time.Time
		}
		var rpm, itpm tally
		run := func(tl *tally, key string, workers int) *sync.WaitGroup {
			var wg sync.WaitGroup
			deadline := time.Now().Add(4 * time.Second)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; time.Now().Before(deadline); i++ {
						switch code := post(fleet[(w+i)%3], key, "chat", "", nil); code {
						case 200:
							now := time.Now()
							tl.ok.Add(1)
							tl.mu.Lock()
							if tl.first.IsZero() {
								tl.first = now
							}
							tl.last = now
							tl.mu.Unlock()
						case 429:
							tl.refused.Add(1)
						default:
							tl.other.Add(1)
						}
					}
				}()
			}
			return &wg
		}
		a, b := run(&rpm, keys["rpm"], 6), run(&itpm, keys["itpm"], 6)
		a.Wait()
		b.Wait()
		for name, tl := range map[string]*tally{"rpm": &rpm, "itpm": &itpm} {
			if tl.other.Load() > 0 || tl.refused.Load() == 0 {
				t.Fatalf("key %s: %d answered, %d refused, %d other: the load must reach the budget, and nothing else may fail",
					name, tl.ok.Load(), tl.refused.Load(), tl.other.Load())
			}
		}
		span := rpm.last.Sub(rpm.first)
		want := 200 + 1200*span.Minutes() // a burst of 10 s, then 20 a second
		t.Logf("requests: admitted %d over %v, the budget allows %.1f", rpm.ok.Load(), span.Round(time.Millisecond), want)
		if got := float64(rpm.ok.Load()); got > want+1 || got < 0.98*want {
			t.Errorf("the fleet admitted %.0f requests, want %.1f within 2%%", got, want)
		}
		// Tokens: what the three replicas counted for the itpm key.
		tokens := 0.0
		for _, r := range fleet {
			tokens += r.metric(t, `sluice_tokens_total{direction="input",key="itpm"`)
		}
		span = itpm.last.Sub(itpm.first)
		wantTok := 3000 + 3000*span.Minutes()
		perReq := tokens / float64(itpm.ok.Load())
		t.Logf("input tokens: admitted %.0f (%d requests of %.0f) over %v, the budget allows %.1f", tokens, itpm.ok.Load(), perReq, span.Round(time.Millisecond), wantTok)
		if tokens > wantTok+perReq || tokens < 0.98*wantTok {
			t.Errorf("the fleet admitted %.0f input tokens, want %.1f within 2%%", tokens, wantTok)
		}
	})

	t.Run("sluice load round-robin across the fleet meets one budget", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "load.yaml")
		text := strings.ReplaceAll(fleetLoad, "${LOADHASH}", config.KeyHash(keys["load"]))
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var targets []string
		for _, r := range fleet {
			targets = append(targets, "http://"+r.listen)
		}
		jsonPath := filepath.Join(t.TempDir(), "load.json")
		out, err := exec.Command(bin, "load", path, "--target", strings.Join(targets, ","), "--json", jsonPath, "--quiet").CombinedOutput()
		if err != nil {
			t.Fatalf("sluice load: %v\n%s", err, out)
		}
		var rows []report.Summary
		data, _ := os.ReadFile(jsonPath)
		if err := json.Unmarshal(data, &rows); err != nil || len(rows) != 1 {
			t.Fatalf("load report: %v\n%s", err, data)
		}
		ok, limited := rows[0].Counts["ok"], rows[0].Counts["rateLimited"]
		// A burst of 100 (10 s at 10 a second), then 10 a second over the
		// 3 s run: 130, give or take the run's edges.
		t.Logf("sluice load over three replicas: %d answered, %d rate-limited\n%s", ok, limited, out)
		if ok < 125 || ok > 135 || limited == 0 {
			t.Errorf("%d answered and %d rate-limited; want about 130 answered (a burst of 100, then 10 a second for 3 s)", ok, limited)
		}
		for i, r := range fleet {
			if n := r.metric(t, `sluice_tokens_total{direction="input",key="load"`); n == 0 {
				t.Errorf("replica %d answered none of the load", i)
			}
		}
	})

	state := func(r *replica) float64 { return r.metric(t, `sluice_breaker_state{provider="down"}`) }
	probes := func(r *replica) float64 {
		return r.metric(t, `sluice_breaker_probes_total{provider="down",result="error"}`)
	}
	t.Run("one replica's trip is the fleet's", func(t *testing.T) {
		var codes []string
		for range 12 {
			start := time.Now()
			code := post(fleet[0], keys["open"], "doomed", "", nil)
			codes = append(codes, fmt.Sprintf("%d in %v", code, time.Since(start).Round(time.Millisecond)))
		}
		t.Logf("twelve requests to the failing provider: %s", strings.Join(codes, ", "))

		if state(fleet[0]) == 0 {
			t.Fatal("replica 0 did not trip on twelve failures")
		}
		tripped := time.Now()
		waitUntil(t, 5*time.Second, "replicas 1 and 2 to adopt the trip", func() bool { return state(fleet[1]) != 0 && state(fleet[2]) != 0 })
		took := time.Since(tripped)
		t.Logf("out of rotation on all three %v after replica 0 tripped", took.Round(time.Millisecond))
		if took > time.Second {
			t.Errorf("the trip reached the fleet after %v, want within 1 s", took)
		}
	})

	t.Run("one replica probes, and another takes over", func(t *testing.T) {
		var prober *replica
		waitUntil(t, 15*time.Second, "a replica to probe twice", func() bool {
			for _, r := range fleet {
				if probes(r) >= 2 {
					prober = r
					return true
				}
			}
			return false
		})
		for _, r := range fleet {
			if r != prober && probes(r) > 0 {
				t.Fatalf("two replicas probe the provider")
			}
		}
		prober.proc.Kill()
		killed := time.Now()
		waitUntil(t, 15*time.Second, "another replica to take probing over", func() bool {
			for _, r := range fleet {
				if r != prober && probes(r) > 0 {
					return true
				}
			}
			return false
		})
		t.Logf("probing moved %v after the prober died (lease 5 s)", time.Since(killed).Round(time.Millisecond))
		var alive []*replica
		for _, r := range fleet {
			if r != prober {
				alive = append(alive, r)
			}
		}
		fleet = alive
	})

	t.Run("without Redis nothing is lost, and its return shares again", func(t *testing.T) {
		var ok, bad atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if post(fleet[(w+i)%len(fleet)], keys["open"], "chat", "", nil) == 200 {
						ok.Add(1)
					} else {
						bad.Add(1)
					}
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		rc.Kill()
		waitUntil(t, 5*time.Second, "every replica to decide alone", func() bool {
			for _, r := range fleet {
				if r.metric(t, "sluice_fleet_store_shared") != 0 {
					return false
				}
			}
			return true
		})
		back, err := rc.Restart(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { back.Stop() })
		waitUntil(t, 5*time.Second, "every replica to share again", func() bool {
			for _, r := range fleet {
				if r.metric(t, "sluice_fleet_store_shared") != 1 {
					return false
				}
			}
			return true
		})
		close(stop)
		wg.Wait()
		t.Logf("%d answered, %d not, through Redis's death and return", ok.Load(), bad.Load())
		if bad.Load() > 0 || ok.Load() == 0 {
			t.Errorf("%d requests failed while Redis was away", bad.Load())
		}
		for i, r := range fleet {
			// The log is buffered: wait for the lines, not for the moment.
			waitUntil(t, 5*time.Second, fmt.Sprintf("replica %d's log to tell of Redis leaving and coming back", i), func() bool {
				out := r.proc.Output()
				return strings.Contains(out, "shared store unreachable") && strings.Contains(out, "shared store answering again")
			})
		}
	})
}

// waitUntil polls cond every 20 ms until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
