package e2e

import (
	"os"
	"testing"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// Seed 000's brownout, compressed, with a healthy second provider, run by
// real processes: two sluice mock providers (the primary browns out),
// sluice serve with a slow-call breaker and hedging, and sluice load. The
// breaker trips on calls still in flight and new requests fail over to
// the backup; the calls admitted before the trip are hedged or rescued
// there. At least 99% are answered within patience, nobody is shed,
// nobody sits out the whole patience, and the outcome matches the
// simulator's.
func TestBrownoutFailsOverInRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 35 s")
	}
	simRow, real := both(t, "testdata/brownout.yaml", "primary", "backup")
	total := 0
	for _, n := range real {
		total += n
	}
	ok, timedOut := real[report.OK.String()], real[report.TimedOut.String()]
	if float64(ok) < 0.99*float64(total) {
		t.Errorf("answered %d of %d within patience; want at least 99%%", ok, total)
	}
	if real[report.Shed.String()] != 0 || real[report.Failed.String()] != 0 || real[report.Lost.String()] != 0 {
		t.Errorf("with a healthy backup nothing should be shed, fail or be lost: %v", real)
	}
	// Calls admitted before detection are hedged, or rescued the moment
	// the breaker opens: none waits out the deadline. (A few are allowed
	// for a machine too busy to run the gateway's timers on time; runs
	// here have none.)
	if timedOut > 3 {
		t.Errorf("timedOut %d: users sat out the whole patience; the simulator predicts %d", timedOut, simRow.Counts[report.TimedOut])
	}
	if !within10pc(simRow.Counts[report.OK], ok) {
		t.Errorf("ok: simulated %d, real %d: more than 10%% apart", simRow.Counts[report.OK], ok)
	}
}

// The same brownout, failed over to a backup of the other vendor: the
// clients speak OpenAI, the backup Anthropic. Every client still gets an
// OpenAI chat answer (sluice load fails any other shape), as many are
// answered within patience as with a backup of the same kind, and the
// backup served the answers the primary could not, through translation.
func TestBrownoutFailsOverAcrossVendorsInRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 35 s")
	}
	simRow, real, _, admin := bothWithSummary(t, "testdata/brownout-cross-vendor.yaml", "primary", "backup")
	total := 0
	for _, n := range real {
		total += n
	}
	if ok := real[report.OK.String()]; float64(ok) < 0.99*float64(total) {
		t.Errorf("answered %d of %d within patience; want at least 99%%", ok, total)
	}
	if real[report.Failed.String()] != 0 || real[report.Shed.String()] != 0 || real[report.Lost.String()] != 0 {
		t.Errorf("every answer should be an OpenAI chat answer, none shed or lost: %v", real)
	}
	if s, r := simRow.Counts[report.OK], real[report.OK.String()]; !within10pc(s, r) {
		t.Errorf("ok: simulated %d, real %d: more than 10%% apart", s, r)
	}
	// The backup answers about a third of the run (the ten slow seconds
	// of thirty) and every hedge and rescue; the primary's breaker must
	// have sent them there.
	backup, err := metricSum(admin, `sluice_upstream_responses_total{`, `code="200"`, `provider="backup"`)
	if err != nil {
		t.Fatal(err)
	}
	if backup < 0.25*float64(total) {
		t.Errorf("the Anthropic backup answered %.0f of %d requests; want at least a quarter", backup, total)
	}
	t.Logf("the Anthropic backup answered %.0f of %d OpenAI requests", backup, total)
}

// The same brownout with no second provider. The breaker sheds while the
// primary is slow and probes it with the gateway's own one-token calls,
// so its recovery is noticed within a fraction of a second: answered
// within 2% of the theoretical maximum (every request that arrives
// outside the slow window, 2,400), nothing lost or failed, and nobody
// waits out their patience: the calls admitted before the trip are
// answered early, since the clients say how long they will wait. The
// requests lost are those that arrive between the recovery and the
// first passing probe's verdict (about 1/6 s here, 20 requests at 120
// req/s): a request is held only for a verdict due soon, so that the
// slow window's are refused at once (lifecycle/hold.go).
func TestBrownoutWithoutSecondaryInRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 35 s")
	}
	simRow, real := both(t, "testdata/brownout-single.yaml", "primary")
	const answerable = 2400 // 120 req/s for the 20 s outside [5 s, 15 s)
	ok, timedOut := real[report.OK.String()], real[report.TimedOut.String()]
	if float64(ok) < 0.98*answerable {
		t.Errorf("answered %d; want within 2%% of the %d that could be", ok, answerable)
	}
	// The breaker trips well within a second of the onset; the calls
	// admitted before it (up to 120) are answered early, not timed out.
	// Users made into probes would add one timedOut per probe (hundreds).
	// A few are allowed for a machine too busy to run the gateway's
	// timers on time (0.5 % of the answerable).
	if timedOut > 12 {
		t.Errorf("timedOut %d; the calls stranded by the brownout should be answered early (the simulator predicts %d)", timedOut, simRow.Counts[report.TimedOut])
	}
	if real[report.Shed.String()] == 0 || real[report.Failed.String()] != 0 || real[report.Lost.String()] != 0 {
		t.Errorf("want the slow minute shed, and nothing failed or lost: %v", real)
	}
	if !within10pc(simRow.Counts[report.OK], ok) {
		t.Errorf("ok: simulated %d, real %d: more than 10%% apart", simRow.Counts[report.OK], ok)
	}
}

// A partial brownout in real processes: from 10 s to 30 s, 30% of the
// primary's calls take longer than users wait. The primary's breaker
// trips at a 20% slow rate, traffic fails over, and the calls stranded
// on the primary are rescued on the backup: at least 99% answered,
// nothing shed, and agreement with the simulator.
func TestPartialBrownoutInRealProcesses(t *testing.T) {
	needLong(t, "runs real processes for about 45 s")
	simRow, real := both(t, "testdata/partial.yaml", "primary", "backup")
	const total = 4800 // 120 req/s for 40 s
	ok := real[report.OK.String()]
	if float64(ok) < 0.99*total {
		t.Errorf("answered %d of %d within patience; want at least 99%% (30%% of the primary's calls were too slow for a fifth of the run)", ok, total)
	}
	if real[report.Shed.String()] != 0 || real[report.Failed.String()] != 0 {
		t.Errorf("with a healthy backup nothing should be shed or fail: %v", real)
	}
	// The slow calls are rescued, on the tripped primary and on the
	// recovering one alike (the allowance is for a busy machine, as
	// above).
	if n := real[report.TimedOut.String()]; n > 3 {
		t.Errorf("timedOut %d: slow calls were left to sit out the patience", n)
	}
	if !within10pc(simRow.Counts[report.OK], ok) {
		t.Errorf("ok: simulated %d, real %d: more than 10%% apart", simRow.Counts[report.OK], ok)
	}
}

// Everything slow, in real processes: both providers take 5 s per call
// for 20 s. There is no fast provider to find, so the gateway sheds most
// of that window at once instead of letting users wait out 2.5 s, and
// serves everything else.
func TestEverythingSlowShedsInRealProcesses(t *testing.T) {
	needLong(t, "runs real processes for about 55 s")
	simRow, real := both(t, "testdata/all-slow.yaml", "primary", "backup")
	const answerable, slowWindow = 3600, 2400 // 120 req/s outside and inside [10 s, 30 s)
	ok, shed := real[report.OK.String()], real[report.Shed.String()]
	if float64(ok) < 0.98*answerable {
		t.Errorf("answered %d of the %d that could be", ok, answerable)
	}
	if float64(shed) < 0.5*slowWindow {
		t.Errorf("shed %d of the %d in the slow window; the rest waited for nothing", shed, slowWindow)
	}
	for _, col := range []report.Outcome{report.OK, report.Shed} {
		if s, r := simRow.Counts[col], real[col.String()]; !within10pc(s, r) {
			t.Errorf("%s: simulated %d, real %d", col, s, r)
		}
	}
}

// 429 bursts in real processes: for 10 s, 60% of the primary's calls are
// refused with 429 and a retry-after. A 429 is pacing, not an error: the
// breaker never trips (nothing is shed), and refused calls are retried on
// the backup within the retry budget, which is what bounds the failures.
func TestRateLimitBurstsRetriedInRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 35 s")
	}
	simRow, real := both(t, "testdata/rate-limited.yaml", "primary", "backup")
	if real[report.Shed.String()] != 0 {
		t.Errorf("shed %d: a 429 must not trip the breaker", real[report.Shed.String()])
	}
	if s, r := simRow.Counts[report.OK], real[report.OK.String()]; !within10pc(s, r) {
		t.Errorf("ok: simulated %d, real %d", s, r)
	}
	// Without retries, 60% of 1,200 calls (about 720) would fail.
	if f := real[report.Failed.String()]; f > 2*simRow.Counts[report.Failed]+30 {
		t.Errorf("failed %d; the simulator predicts %d", f, simRow.Counts[report.Failed])
	}
}

// A flapping primary in real processes: slow and healthy by turns every
// 2.5 s for 30 s. The breaker keeps traffic on the backup rather than
// following every swing, and fails back once the flapping stops; its
// transitions, read from the gateway's own /metrics, stay few.
func TestFlappingDoesNotOscillateInRealProcesses(t *testing.T) {
	needLong(t, "runs real processes for about 55 s")
	simRow, real, _, admin := bothWithSummary(t, "testdata/flapping.yaml", "primary", "backup")
	if s, r := simRow.Counts[report.OK], real[report.OK.String()]; !within10pc(s, r) {
		t.Errorf("ok: simulated %d, real %d", s, r)
	}
	if real[report.Shed.String()] != 0 || real[report.Failed.String()] != 0 {
		t.Errorf("with a healthy backup nothing should be shed or fail: %v", real)
	}
	count := func(to string) int {
		n, err := metricSum(admin, `sluice_breaker_transitions_total{`, `provider="primary"`, `to="`+to+`"`)
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	opens, closes := count("open"), count("closed")
	t.Logf("the primary's breaker opened %d times and failed back fully %d times", opens, closes)
	// Following every swing would fail traffic back to the primary after
	// each of its six healthy spells. With the backoff it fails back once,
	// after the flapping stops (the last open period, about 13.6 s from
	// 25 s, ends after the last slow spell at 37.5 s). Each probe that
	// meets a slow spell re-opens it, but the open time doubles from
	// 1.7 s, so 30 s of flapping allows about six opens.
	if opens == 0 || opens > 7 || closes > 1 {
		t.Errorf("opened %d times, failed back fully %d times; want tripped, at most one full fail-back, opens bounded by the backoff", opens, closes)
	}
}

// longBrownouts are the real-time brownout runs kept out of the plain
// test command (its ten minutes) and run by CI by name.
const longBrownouts = "SLUICE_E2E_LONG=1 go test ./test/e2e -run 'PartialBrownout|EverythingSlow|Flapping|AcrossClouds' -v"

// needLong skips t, saying why and how to run it, unless SLUICE_E2E_LONG
// is set.
func needLong(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("SLUICE_E2E_LONG") == "" {
		t.Skipf("%s; set SLUICE_E2E_LONG=1 to run it (%s)", why, longBrownouts)
	}
}
