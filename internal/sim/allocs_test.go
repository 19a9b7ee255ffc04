package sim

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// Bounds on what one simulated request allocates through the full stack
// (testdata/hour.yaml: an adaptive limit, a breaker, a priority queue,
// slow flags, deadlines and a partial brownout). Bytes and allocations
// are exact where time is not: a change that makes every request
// allocate more fails here, whatever the machine's load. The first
// bounds were 300 B and 2 allocations; the tree of 2026-12-07 measures
// 170 B and 0.49 with the setup counted, and these bounds hold that.
const (
	maxBytesPerRequest  = 200
	maxAllocsPerRequest = 1
)

// TestAllocationsPerRequest runs three minutes of the speed benchmark's
// hour (the brownout moved into them) and holds its allocations per
// request to the bounds above. The run's setup (its sample slices, sized
// from the schedule) is counted too, spread over 180,000 requests.
func TestAllocationsPerRequest(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own account; run without -race: go test ./internal/sim")
	}
	raw, err := os.ReadFile("testdata/hour.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(raw), "duration: 1h", "duration: 3m", 1)
	s = strings.Replace(s, "{start: 20m, end: 25m,", "{start: 60s, end: 120s,", 1)
	if s == string(raw) {
		t.Fatal("testdata/hour.yaml changed: this test edits its duration and brownout")
	}
	f, err := scenario.Parse([]byte(s), "hour-3m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(f, Options{}); err != nil { // warm up: code paths, not state
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(f, Options{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	n := float64(res.Rows[0].Unique)
	bytes := float64(after.TotalAlloc-before.TotalAlloc) / n
	allocs := float64(after.Mallocs-before.Mallocs) / n
	t.Logf("%.0f requests: %.1f B and %.2f allocations per request", n, bytes, allocs)
	if res.Rows[0].Trips == 0 {
		t.Error("the brownout tripped no breaker: the run does not exercise the full stack")
	}
	if bytes > maxBytesPerRequest || allocs > maxAllocsPerRequest {
		t.Errorf("%.1f B and %.2f allocations per simulated request, want at most %d B and %d", bytes, allocs, maxBytesPerRequest, maxAllocsPerRequest)
	}
}
