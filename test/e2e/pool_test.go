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
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
	"github.com/sluice-gw/sluice/internal/sim"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// poolTimeScale replays the 40-second ramp in 10 s.
const poolTimeScale = 0.25

// poolReplicas are the pool's replicas in testdata/pool-hot.yaml; the
// last is the hot one.
var poolReplicas = []string{"vllm-1", "vllm-2", "vllm-3", "vllm-4"}

// A pool of four sluice mock replicas, one of them hot, on a short
// seed-002-like ramp (testdata/pool-hot.yaml), served by real processes
// with load-aware routing and with round-robin; then the same with the
// hot replica made like the others. Load-aware routing must cut p99
// TTFT by at least 30 % against round-robin with the hot replica,
// without losing goodput, must send the hot replica less than its
// quarter, and must do no worse than round-robin (within noise) when
// the replicas are even. The simulator's figures are logged beside the
// real ones, both in the scenario's time. Four 10-second runs:
//
//	go test ./e2e -run Pool -v
func TestPoolLoadAwareAgainstRoundRobin(t *testing.T) {
	bin := buildSluice(t)
	hot, err := os.ReadFile("testdata/pool-hot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	even := evenPool(t, string(hot))
	type figures struct {
		p99, goodput float64
		hotShare     float64
	}
	got := map[string]figures{}
	for _, v := range []struct{ name, text string }{{"hot", string(hot)}, {"even", even}} {
		simRows := simulatePool(t, v.text)
		for _, policy := range []string{"least_loaded", "round_robin"} {
			t.Run(v.name+"/"+policy, func(t *testing.T) {
				sum, calls := runPool(t, bin, v.text, policy)
				// sluice load reports wall time; in the scenario's own
				// time, as the simulator reports it, times are 1/scale
				// as long and rates scale times as high.
				f := figures{p99: sum.TTFTMs["p99"] / poolTimeScale, goodput: sum.GoodputPerSec * poolTimeScale}
				total := 0
				for _, n := range calls {
					total += n
				}
				if total > 0 {
					f.hotShare = float64(calls[len(calls)-1]) / float64(total)
				}
				got[v.name+"/"+policy] = f
				s := simRows[policy]
				t.Logf("%s %-12s real: TTFT p99 %6.0f ms, goodput %5.1f/s, calls per replica %v (last %.0f %%); simulated: TTFT p99 %6.0f ms, goodput %5.1f/s",
					v.name, policy, f.p99, f.goodput, calls, 100*f.hotShare, s.TTFTMs["p99"], s.GoodputPerSec)
			})
		}
	}
	ll, rr := got["hot/least_loaded"], got["hot/round_robin"]
	if ll.p99 == 0 || rr.p99 == 0 {
		t.Fatalf("a run is missing: %+v", got)
	}
	t.Logf("hot replica: TTFT p99 %.0f ms (least_loaded) vs %.0f ms (round_robin): %.0f %% lower; goodput %.1f/s vs %.1f/s",
		ll.p99, rr.p99, 100*(1-ll.p99/rr.p99), ll.goodput, rr.goodput)
	if ll.p99 > 0.7*rr.p99 {
		t.Errorf("hot replica: least_loaded TTFT p99 %.0f ms is not 30 %% below round_robin's %.0f ms", ll.p99, rr.p99)
	}
	if ll.goodput < rr.goodput {
		t.Errorf("hot replica: least_loaded goodput %.1f/s below round_robin's %.1f/s", ll.goodput, rr.goodput)
	}
	if ll.hotShare >= 0.2 || rr.hotShare < 0.2 {
		t.Errorf("hot replica's share of calls: least_loaded %.0f %%, round_robin %.0f %%: want under 20 %% and about 25 %%", 100*ll.hotShare, 100*rr.hotShare)
	}
	ell, erv := got["even/least_loaded"], got["even/round_robin"]
	t.Logf("even replicas: TTFT p99 %.0f ms (least_loaded) vs %.0f ms (round_robin); goodput %.1f/s vs %.1f/s",
		ell.p99, erv.p99, ell.goodput, erv.goodput)
	// No worse, within what two busy cores make of one 10-second run.
	if ell.p99 > 1.2*erv.p99 || ell.goodput < 0.9*erv.goodput {
		t.Errorf("even replicas: least_loaded (TTFT p99 %.0f ms, goodput %.1f/s) worse than round_robin (%.0f ms, %.1f/s)",
			ell.p99, ell.goodput, erv.p99, erv.goodput)
	}
}

// evenPool is the hot pool's file with the hot replica's behaviour made
// the others'.
func evenPool(t *testing.T, hot string) string {
	t.Helper()
	i := strings.Index(hot, "    vllm-3:\n")
	j := strings.Index(hot, "    vllm-4:")
	k := strings.Index(hot, "  policies:")
	if i < 0 || j < i || k < j {
		t.Fatal("testdata/pool-hot.yaml: upstreams vllm-3, vllm-4 and policies not where the test expects them")
	}
	block := strings.TrimPrefix(hot[i:j], "    vllm-3:\n")
	return strings.Replace(hot[:j]+"    vllm-4:\n"+block+hot[k:], "name: pool-hot-small", "name: pool-even-small", 1)
}

// simulatePool runs the file through the simulator, by policy.
func simulatePool(t *testing.T, text string) map[string]report.Summary {
	t.Helper()
	r := strings.NewReplacer("${LISTEN}", "127.0.0.1:1", "${ADMIN}", "127.0.0.1:2",
		"${VLLM_1}", "127.0.0.1:11", "${VLLM_2}", "127.0.0.1:12", "${VLLM_3}", "127.0.0.1:13", "${VLLM_4}", "127.0.0.1:14")
	f, err := scenario.Parse([]byte(r.Replace(text)), "pool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(f, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]report.Summary{}
	sums := report.Summarise(res.Rows)
	for i, p := range f.Scenario.Policies {
		out[p.Name] = sums[i]
	}
	return out
}

// runPool runs one policy in real processes: sluice serve, one sluice
// mock per replica, sluice load. It returns the load's summary and the
// calls each replica answered.
func runPool(t *testing.T, bin, text, policy string) (report.Summary, []int) {
	t.Helper()
	listen, admin := freeAddr(t), freeAddr(t)
	subst := []string{"${LISTEN}", listen, "${ADMIN}", admin}
	addrs := make([]string, len(poolReplicas))
	for i := range poolReplicas {
		addrs[i] = freeAddr(t)
		subst = append(subst, fmt.Sprintf("${VLLM_%d}", i+1), addrs[i])
	}
	path := filepath.Join(t.TempDir(), "pool.yaml")
	if err := os.WriteFile(path, []byte(strings.NewReplacer(subst...).Replace(text)), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := fmt.Sprint(poolTimeScale)
	mocks := make([]*procs.Proc, len(poolReplicas))
	for i, name := range poolReplicas {
		mocks[i] = start(t, nil, bin, "mock", "--scenario", path, "--provider", name, "--listen", addrs[i], "--grace", "1s", "--time-scale", ts)
	}
	for i, a := range addrs {
		await(t, mocks[i], 10*time.Second, ready("http://"+a+"/stats"))
	}
	serve := start(t, ready("http://"+admin+"/readyz"), bin, "serve", "--config", path, "--policy", policy, "--time-scale", ts)
	jsonPath := filepath.Join(t.TempDir(), "load.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	load := exec.CommandContext(ctx, bin, "load", path, "--policy", policy, "--target", "http://"+listen,
		"--metrics", "http://"+admin+"/metrics", "--time-scale", ts, "--json", jsonPath, "--quiet")
	out, err := load.CombinedOutput()
	if err != nil {
		t.Fatalf("sluice load: %v\n%s\nserve:\n%s", err, out, serve.Output())
	}
	sum := readLoadReport(t, jsonPath)
	calls := make([]int, len(addrs))
	for i, a := range addrs {
		calls[i] = mockRequests(t, "http://"+a+"/stats")
	}
	return sum, calls
}

// mockRequests reads how many calls a mock was sent.
func mockRequests(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Total int `json:"total"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Total
}
