package e2e

import (
	"testing"

	"github.com/sluice-gw/sluice/report"
)

// Seed 000's brownout, compressed, with a healthy second provider, run by
// real processes: two sluice mock providers (the primary browns out),
// sluice serve with a slow-call breaker and hedging, and sluice load. The
// breaker trips on calls still in flight and new requests fail over to
// the backup; the calls admitted before the trip are hedged there. At
// least 99% are answered within patience, nobody is shed, and the
// outcome matches the simulator's.
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
	// Only calls admitted before detection and past the hedge budget wait
	// out the deadline.
	if timedOut > 2*simRow.Counts[report.TimedOut]+20 {
		t.Errorf("timedOut %d; the simulator predicts %d", timedOut, simRow.Counts[report.TimedOut])
	}
	if !within10pc(simRow.Counts[report.OK], ok) {
		t.Errorf("ok: simulated %d, real %d: more than 10%% apart", simRow.Counts[report.OK], ok)
	}
}
