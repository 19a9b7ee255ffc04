package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// runFile simulates a loaded scenario and returns its rows by policy
// name, with the report's bytes (tables and JSON).
func runFile(t *testing.T, f *scenario.File) (map[string]*report.Row, []byte) {
	t.Helper()
	res, err := Run(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	report.WriteTable(&b, res.Rows)
	if err := report.WriteJSON(&b, res.Rows); err != nil {
		t.Fatal(err)
	}
	WriteCSV(&b, res.Series)
	rows := map[string]*report.Row{}
	for _, r := range res.Rows {
		rows[r.Name] = r
	}
	return rows, b.Bytes()
}

func load(t *testing.T, path string) *scenario.File {
	t.Helper()
	f, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Seed 004: replicas that each keep their own latency window disagree
// about a partly slow provider; with a shared store they judge the
// fleet's calls and adopt one verdict, within the store's latency: the
// fleet decides as one gateway seeing all the traffic would. What
// sharing does not do, under the default breaker, is stop the breaker
// cycling on a brownout that slows 30 % of calls: one gateway trips,
// probes, fails back and trips again too, and so does the fleet, all at
// once.
func TestFleetFlapping(t *testing.T) {
	f := load(t, "../../scenarios/fleet/flapping.yaml")
	rows, out := runFile(t, f)
	_, again := runFile(t, f)
	if !bytes.Equal(out, again) {
		t.Fatal("two runs of the same fleet scenario and seed differ")
	}
	local, shared := rows["local windows"].Fleet, rows["shared store"].Fleet
	if local == nil || shared == nil {
		t.Fatal("no fleet figures")
	}
	t.Logf("local:  trips %v (own %d), disagreement %v, flips %d", local.Trips, local.OwnTrips, local.Disagreement, local.Flips)
	t.Logf("shared: trips %v (own %d), disagreement %v, flips %d", shared.Trips, shared.OwnTrips, shared.Disagreement, shared.Flips)
	if local.Shared || !shared.Shared || local.Replicas != 3 || shared.Replicas != 3 {
		t.Fatalf("modes: local %+v, shared %+v", local, shared)
	}
	sum := func(xs []int) int {
		n := 0
		for _, x := range xs {
			n += x
		}
		return n
	}
	// Alone, every trip is a replica's own, and they come at different
	// moments: the replicas disagree for a long time.
	if local.OwnTrips != sum(local.Trips) || local.OwnTrips < 3 {
		t.Errorf("local: own trips %d of %v", local.OwnTrips, local.Trips)
	}
	if local.Disagreement < 30*time.Second {
		t.Errorf("local: disagreement %v; seed 004 expects replicas to disagree", local.Disagreement)
	}
	// Shared, every replica trips as often as the others, most of them
	// by adoption, and they disagree for about the store's latency per
	// change (a few milliseconds each).
	for _, n := range shared.Trips {
		if n != shared.Trips[0] {
			t.Errorf("shared: trips per replica differ: %v", shared.Trips)
		}
	}
	if shared.OwnTrips >= sum(shared.Trips) {
		t.Errorf("shared: own trips %d of %v: nothing adopted", shared.OwnTrips, shared.Trips)
	}
	if shared.Disagreement*100 > local.Disagreement || shared.Disagreement > time.Duration(shared.Flips)*50*time.Millisecond {
		t.Errorf("shared: disagreement %v against local %v over %d flips", shared.Disagreement, local.Disagreement, shared.Flips)
	}
	// One decision: each replica trips as often as one gateway taking
	// all the traffic does, within 10%.
	f.Scenario.Fleet.Replicas = 1
	one, _ := runFile(t, f)
	lone := one["local windows"].Trips
	t.Logf("one gateway with all the traffic: %d trips", lone)
	if d := shared.Trips[0] - lone; d*10 > lone || -d*10 > lone {
		t.Errorf("shared: %d trips per replica against one gateway's %d", shared.Trips[0], lone)
	}
}

// A key's budget over three replicas: alone each admits the whole
// budget, three times it together; sharing admits the budget once. A
// fleet that loses its store for a minute never admits more than the
// budget either: each replica takes from its share meanwhile
// (fleet.Share), and what they took is charged to the store's budget
// when it comes back (package fleet, "Semantics"). The charge lands at
// once, into debt, while the store's budget had refilled during the
// outage with nobody taking from it: the fleet admits up to the
// outage's refill (600 here) less than the budget, never more.
func TestFleetKeyBudget(t *testing.T) {
	f := load(t, "../../scenarios/fleet/key-budget.yaml")
	const budget = 100 + 10*300 // burst + 10/s for 5 minutes
	rows, _ := runFile(t, f)
	admitted := func(r *report.Row) int { return r.Unique - r.Counts[report.RateLimited] }
	local, shared := admitted(rows["local budgets"]), admitted(rows["shared store"])
	t.Logf("budget %d: local %d (%.2f×), shared %d", budget, local, float64(local)/budget, shared)
	if d := float64(shared-budget) / budget; d > 0.02 || d < -0.02 {
		t.Errorf("shared: %d admitted, budget %d", shared, budget)
	}
	if r := float64(local) / budget; r < 2.9 || r > 3.1 {
		t.Errorf("local: %d admitted, %.2f× the budget", local, r)
	}

	f.Scenario.Fleet.Store.Down = []scenario.Window{{Start: 60 * time.Second, End: 120 * time.Second}}
	f.Scenario.Policies = f.Scenario.Policies[1:]
	rows, _ = runFile(t, f)
	down := admitted(rows["shared store"])
	t.Logf("store down 60-120 s: %d admitted", down)
	const refill = 10 * 60 // the outage's minute at 10/s
	if float64(down) > budget*1.02 || down < budget-refill {
		t.Errorf("store down for a minute: %d admitted, budget %d (at most %d fewer)", down, budget, refill)
	}
}

// A fleet of one is the gateway alone: the same bytes, whatever the
// fleet's other settings.
func TestFleetOfOne(t *testing.T) {
	f := load(t, "../../scenarios/brownouts/partial.yaml")
	_, before := runFile(t, f)
	f.Scenario.Fleet = scenario.Fleet{Replicas: 1, Balance: scenario.Random,
		Store: scenario.FleetStore{Latency: 7 * time.Millisecond, Down: []scenario.Window{{Start: time.Minute, End: 2 * time.Minute}}}}
	_, after := runFile(t, f)
	if !bytes.Equal(before, after) {
		t.Fatal("replicas: 1 changed the report")
	}
}
