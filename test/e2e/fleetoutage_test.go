package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/procs"
	"github.com/sluice-gw/sluice/internal/sim"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// outageLoad is sluice load's scenario for the outage run: one key,
// round robin over the replicas, at six times its budget's rate.
const outageLoad = `
providers:
  - {name: fast, kind: openai, base_url: http://127.0.0.1:1/v1}
models:
  - {name: chat, targets: [{provider: fast, model: m}]}
keys:
  - {name: load, sha256: ${LOADHASH}}
scenario:
  name: fleet-outage
  seed: 1
  duration: ${DURATION}
  keys: {load: sk-fleet-load}
  clients: {model: chat, key: load, rate: [{at: 0s, rps: 60}], patience: 5s}
  upstreams:
    fast: {}
`

// outageSim is the same run for sluice sim: three replicas sharing a
// store that is down for the same window, the key's budget in the
// config, calls as fast as the mock's.
const outageSim = `
providers:
  - {name: fast, kind: openai, base_url: http://127.0.0.1:1/v1, max_in_flight: 60}
models:
  - {name: chat, targets: [{provider: fast, model: m}]}
keys:
  - {name: load, sha256: ${LOADHASH}, limits: {rpm: 600}}
scenario:
  name: fleet-outage
  seed: 1
  duration: ${DURATION}
  drain: true
  fleet:
    replicas: 3
    store: {down: [{start: ${DOWN}, end: ${UP}}]}
  clients: {model: chat, key: load, rate: [{at: 0s, rps: 60}], patience: 5s, max_tokens: 4}
  upstreams:
    fast: {ttft: 2ms, tpot: 0s, output_tokens: 4}
  policies:
    - name: shared store
      gateway: {store: "redis://sim:6379/0"}
`

// The same store outage, through three sluice serve processes on a
// Redis of the test's own that is killed and restarted (or paused and
// resumed), and through sluice sim: how many requests of a key's budget
// each admits. Measured, not asserted within a bound (the real run's
// timing is the machine's); it asserts only that neither admits more
// than the budget allows, and logs both figures.
//
//	SLUICE_E2E_LONG=1 go test ./test/e2e -run FleetStoreOutage -v
func TestFleetStoreOutageAgainstSim(t *testing.T) {
	if os.Getenv("SLUICE_E2E_LONG") == "" {
		t.Skip("runs real processes for over a minute; set SLUICE_E2E_LONG=1 (SLUICE_E2E_LONG=1 go test ./test/e2e -run FleetStoreOutage -v)")
	}
	duration, down, up := 60*time.Second, 15*time.Second, 35*time.Second
	if v := os.Getenv("SLUICE_OUTAGE"); v != "" {
		// SLUICE_OUTAGE=80s,20s,30s: the run's duration, the outage's
		// start and end.
		var err error
		d := strings.Split(v, ",")
		if len(d) == 3 {
			if duration, err = time.ParseDuration(d[0]); err == nil {
				if down, err = time.ParseDuration(d[1]); err == nil {
					up, err = time.ParseDuration(d[2])
				}
			}
		}
		if len(d) != 3 || err != nil || !(0 < down && down < up && up < duration) {
			t.Fatalf("SLUICE_OUTAGE=%q: want duration,start,end (80s,20s,30s) with 0 < start < end < duration", v)
		}
	}
	budget := 100 + 10*duration.Seconds() // a burst of 10 s, then 10 a second
	hows := []string{"killed", "paused"}
	if v := os.Getenv("SLUICE_OUTAGE_HOW"); v != "" {
		hows = strings.Split(v, ",")
	}
	for _, how := range hows {
		t.Run(how, func(t *testing.T) {
			bin := buildSluice(t)
			redisAddr := freeAddr(t)
			rc := redisProcess(t, redisAddr)
			fast := freeAddr(t)
			mock := start(t, nil, bin, "mock", "--listen", fast, "--ttft", "2ms", "--tpot", "0s", "--output-tokens", "4")
			await(t, mock, 10*time.Second, ready("http://"+fast+"/stats"))
			hash := config.KeyHash("sk-fleet-load")
			var targets []string
			for i := range 3 {
				r := &replica{listen: freeAddr(t), admin: freeAddr(t)}
				text := strings.NewReplacer("${LISTEN}", r.listen, "${ADMIN}", r.admin, "${REDIS}", redisAddr,
					"${ID}", fmt.Sprintf("r%d", i), "${FAST}", fast, "${DOWN}", "127.0.0.1:1",
					"${RPMHASH}", config.KeyHash("unused-rpm"), "${ITPMHASH}", config.KeyHash("unused-itpm"), "${OPENHASH}", config.KeyHash("unused-open"), "${LOADHASH}", hash).Replace(fleetConfig)
				path := filepath.Join(t.TempDir(), "sluice.yaml")
				if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
				r.proc = runUntilEnd(t, procs.Spec{Path: bin, Args: []string{"serve", "--config", path}, StopSignal: syscall.SIGKILL})
				await(t, r.proc, 10*time.Second, ready("http://"+r.admin+"/readyz"))
				targets = append(targets, "http://"+r.listen)
			}
			path := filepath.Join(t.TempDir(), "load.yaml")
			text := strings.NewReplacer("${LOADHASH}", hash, "${DURATION}", duration.String()).Replace(outageLoad)
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			jsonPath := filepath.Join(t.TempDir(), "load.json")
			cmd := exec.Command(bin, "load", path, "--target", strings.Join(targets, ","), "--json", jsonPath, "--quiet")
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			began := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Until(began.Add(down)))
			if how == "killed" {
				rc.Kill()
			} else {
				rc.Signal(syscall.SIGSTOP)
			}
			time.Sleep(time.Until(began.Add(up)))
			if how == "killed" {
				back, err := rc.Restart(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { back.Stop() })
			} else {
				rc.Signal(syscall.SIGCONT)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("sluice load: %v\n%s", err, out.String())
			}
			var rows []report.Summary
			data, _ := os.ReadFile(jsonPath)
			if err := json.Unmarshal(data, &rows); err != nil || len(rows) != 1 {
				t.Fatalf("load report: %v\n%s", err, data)
			}
			got := rows[0].Counts["ok"]

			simText := strings.NewReplacer("${LOADHASH}", hash, "${DURATION}", duration.String(), "${DOWN}", down.String(), "${UP}", up.String()).Replace(outageSim)
			f, err := scenario.Parse([]byte(simText), "outage.yaml")
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(f, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			row := res.Rows[0]
			simmed := row.Unique - row.Counts[report.RateLimited]
			t.Logf("Redis %s %v to %v of %v: real fleet admitted %d (counts %v), sluice sim %d; the budget allows %.0f, less the outage's refill beyond a burst (%.0f)",
				how, down, up, duration, got, rows[0].Counts, simmed, budget, max(0, 10*(up-down).Seconds()-100))
			if float64(got) > budget*1.02 || float64(simmed) > budget*1.02 {
				t.Errorf("beyond the budget: real %d, sim %d, budget %.0f", got, simmed, budget)
			}
		})
	}
}
