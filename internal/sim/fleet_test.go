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

// Replicas joining and leaving a fleet under load, counted as the
// gateway counts them (fleet.Census over heartbeats, fleet.Joined
// before a joining replica serves): a join makes the fleet hold more
// than its shared max_in_flight for a moment, at most the joining
// replica's share beyond it (the calls the others admitted under
// their larger share run to their end), and a leave never does (the
// leaving replica heartbeats until it has drained, so the others keep
// their smaller share until then).
func TestFleetJoinLeave(t *testing.T) {
	f := load(t, "testdata/fleet-join.yaml")
	rows, out := runFile(t, f)
	_, again := runFile(t, f)
	if !bytes.Equal(out, again) {
		t.Fatal("two runs of the same fleet scenario and seed differ")
	}
	shared, alone := rows["shared store"].Fleet, rows["alone"].Fleet
	if shared == nil || len(shared.Phases) != 3 || alone == nil || len(alone.Phases) != 3 {
		t.Fatalf("phases: shared %+v, alone %+v", shared, alone)
	}
	for _, p := range shared.Phases {
		t.Logf("shared, from %v: %d replicas, %s max_in_flight %d, peak %d in flight, beyond it for %v", p.From, p.Replicas, p.Name, p.Limit, p.Peak, p.Over)
	}
	before, join, leave := shared.Phases[0], shared.Phases[1], shared.Phases[2]
	if before.Replicas != 2 || join.Replicas != 3 || leave.Replicas != 2 || join.From != time.Minute || leave.From != 2*time.Minute {
		t.Errorf("phases: %+v", shared.Phases)
	}
	// The joining replica takes its part out of what the others give
	// back as their calls end (fleet.Claim), so no phase passes the
	// limit. Before, the join held up to the joining replica's share
	// more (12 of 10, for 1.5 s).
	for _, p := range shared.Phases {
		if p.Peak != p.Limit || p.Over != 0 {
			t.Errorf("from %v: peak %d of %d, beyond it for %v; want exactly the limit, never beyond it", p.From, p.Peak, p.Limit, p.Over)
		}
	}
	// Alone, each replica takes the whole limit.
	if p := alone.Phases[1]; p.Peak < 2*p.Limit {
		t.Errorf("alone, three replicas: peak %d; want each to take the whole %d", p.Peak, p.Limit)
	}
}

// A replica that joins while the store is down cannot learn the fleet:
// it serves at once, alone, with the whole limit, as the gateway does
// (it reports ready when the store does not answer); the others keep
// the count they knew. The fleet then holds up to a whole limit more.
func TestFleetJoinStoreDown(t *testing.T) {
	f := load(t, "testdata/fleet-join.yaml")
	f.Scenario.Policies = f.Scenario.Policies[1:]
	f.Scenario.Fleet.Leave = nil
	f.Scenario.Fleet.Store.Down = []scenario.Window{{Start: 50 * time.Second, End: 70 * time.Second}}
	rows, _ := runFile(t, f)
	p := rows["shared store"].Fleet.Phases[1]
	t.Logf("joining with the store down: peak %d of %d, beyond it for %v", p.Peak, p.Limit, p.Over)
	if p.Peak <= p.Limit+p.Limit/3 {
		t.Errorf("peak %d: the joining replica should have taken the whole limit (%d), alone", p.Peak, p.Limit)
	}
}

// Membership through the census changes nothing for a fleet whose size
// is fixed: its replicas count fleet.replicas from the start.
func TestFleetCensusSteady(t *testing.T) {
	f := load(t, "../../scenarios/fleet/key-budget.yaml")
	res, err := Run(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Fleet == nil || r.Fleet.Replicas != 3 || len(r.Fleet.Phases) != 0 {
			t.Errorf("%s: fleet %+v", r.Name, r.Fleet)
		}
	}
}
