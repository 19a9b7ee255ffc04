package sim

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// In a fleet sharing a store, a key's budget lives in the store, so the
// engine's own pressure never sees it run low: the replicas degrade on
// the store's figure instead, as the gateway does. Before they did, the
// shared-store row of this scenario degraded nothing (1,261 ok, 0
// degraded, p50 3,210 ms); now 1,120 of its 1,282 answers are degraded
// (p50 1,570 ms). The key's 429s do not change: degrading saves tokens,
// not requests.
func TestFleetDegradesOnSharedBudget(t *testing.T) {
	rows, _ := runFile(t, load(t, "testdata/fleet-degrade.yaml"))
	local, shared := rows["local budgets"], rows["shared store"]
	t.Logf("local: %d degraded of %d; shared: %d degraded of %d, %d rate-limited", local.Degraded, local.Unique, shared.Degraded, shared.Unique, shared.Counts[report.RateLimited])
	if shared.Degraded == 0 {
		t.Fatal("the shared store's key budget ran low and nothing was degraded")
	}
	if local.Degraded != 0 {
		t.Errorf("each replica keeps the whole budget and uses a third of it, yet %d were degraded", local.Degraded)
	}
}
