package e2e

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// A thin tail in real processes: 3% of a healthy provider's calls take
// ten times longer. Hedging at the provider's own healthy p95, on the
// same provider, brings p99 close to twice the normal latency instead of
// ten times it, and the outcome matches the simulator's.
func TestThinTailHedgedInRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 35 s")
	}
	simRow, real, summary, _ := bothWithSummary(t, "testdata/thin-tail.yaml", "primary")
	simP99 := append(report.Samples(nil), simRow.Latency[1]...).Quantile(.99)
	realP99 := time.Duration(summary.LatencyMs["p99"] * float64(time.Millisecond))
	t.Logf("p99: simulated %v, real %v", simP99, realP99)
	// Unhedged, p99 would be a slow call: about 1.3-2 s.
	if realP99 > 800*time.Millisecond {
		t.Errorf("real p99 %v: the tail was not hedged", realP99)
	}
	if !within10pc(simRow.Counts[report.OK], real[report.OK.String()]) {
		t.Errorf("ok: simulated %d, real %d", simRow.Counts[report.OK], real[report.OK.String()])
	}
}
