package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// poolRows runs a pool scenario and returns its summaries by policy.
func poolRows(t *testing.T, path string) map[string]report.Summary {
	t.Helper()
	f, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]report.Summary{}
	for _, s := range report.Summarise(res.Rows) {
		out[s.Name] = s
	}
	if _, ok := out["least_loaded"]; !ok {
		t.Fatalf("no least_loaded row in %v", res.Rows)
	}
	if _, ok := out["round_robin"]; !ok {
		t.Fatalf("no round_robin row in %v", res.Rows)
	}
	return out
}

// Seed 002's ramp on four replicas, one of them three times as slow:
// load-aware routing (the default) must cut TTFT p99 by at least 30 %
// against round-robin and serve more; with four even replicas it must
// do no worse.
//
// Four six-minute runs: skipped under the race detector, which would
// make them minutes and can find nothing in one goroutine (.ci/run runs
// them without it).
func TestPoolLoadAwareBeatsRoundRobin(t *testing.T) {
	if raceEnabled {
		t.Skip("four six-minute simulations; run without -race: go test ./sim -run PoolLoadAware")
	}
	hot := poolRows(t, "../../scenarios/pools/hot-replica.yaml")
	ll, rr := hot["least_loaded"], hot["round_robin"]
	t.Logf("hot replica: TTFT p99 %.0f ms vs %.0f ms, goodput %.1f/s vs %.1f/s", ll.TTFTMs["p99"], rr.TTFTMs["p99"], ll.GoodputPerSec, rr.GoodputPerSec)
	if ll.TTFTMs["p99"] > 0.7*rr.TTFTMs["p99"] {
		t.Errorf("hot replica: least_loaded TTFT p99 %.0f ms is not 30 %% below round_robin's %.0f ms", ll.TTFTMs["p99"], rr.TTFTMs["p99"])
	}
	if ll.GoodputPerSec <= rr.GoodputPerSec {
		t.Errorf("hot replica: least_loaded goodput %.1f/s, round_robin %.1f/s", ll.GoodputPerSec, rr.GoodputPerSec)
	}
	even := poolRows(t, "../../scenarios/pools/even.yaml")
	ll, rr = even["least_loaded"], even["round_robin"]
	t.Logf("even replicas: TTFT p99 %.0f ms vs %.0f ms, goodput %.1f/s vs %.1f/s", ll.TTFTMs["p99"], rr.TTFTMs["p99"], ll.GoodputPerSec, rr.GoodputPerSec)
	if ll.TTFTMs["p99"] > rr.TTFTMs["p99"] || ll.GoodputPerSec < rr.GoodputPerSec {
		t.Errorf("even replicas: least_loaded (TTFT p99 %.0f ms, goodput %.1f/s) worse than round_robin (%.0f ms, %.1f/s)",
			ll.TTFTMs["p99"], ll.GoodputPerSec, rr.TTFTMs["p99"], rr.GoodputPerSec)
	}
}

// A pool scenario replays byte for byte: the replica picks, the scrapes
// and the modelled replicas are all on the virtual clock.
func TestPoolScenarioDeterministic(t *testing.T) {
	out := func() []byte {
		f, err := scenario.Load("../../scenarios/pools/hot-replica.yaml")
		if err != nil {
			t.Fatal(err)
		}
		f.Scenario.Duration = 2 * time.Minute // at a quarter of the rate: short, still busy
		res, err := Run(f, Options{RPSScale: 0.25})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		report.WriteTable(&b, res.Rows)
		WriteCSV(&b, res.Series)
		return b.Bytes()
	}
	if a, b := out(), out(); !bytes.Equal(a, b) {
		t.Error("two runs of scenarios/pools/hot-replica.yaml differ")
	}
}
