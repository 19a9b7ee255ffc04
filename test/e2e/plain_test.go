package e2e

import (
	"math"
	"os"
	"testing"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// Seed 000's pair in real time (not compressed: the defaults are in
// real units), with the plain config: real sluice serve, mock and load
// processes, against the simulator's prediction for the same file.
// About three and a half minutes, so it runs only when asked:
//
//	SLUICE_E2E_LONG=1 go test ./e2e -run Plain -v
//
// With one provider, the slow minute is refused, and said no to early:
// the requests refused before reaching the provider (at the door, or
// after waiting for a probe's verdict) are refused within a second at
// the 99th percentile (lifecycle/hold.go). The calls caught in flight
// on the provider when it slowed are answered early instead, once it
// more likely than not cannot answer them in time (reach.go); they are
// shed answers too, but no sooner than a call can be judged slow, so
// they are printed apart.
func TestPlainConfigSeed000(t *testing.T) {
	if os.Getenv("SLUICE_E2E_LONG") == "" {
		t.Skip("real-time brownouts (3.5 min); set SLUICE_E2E_LONG=1 to run them")
	}
	for _, c := range []struct {
		file      string
		providers []string
		okAtLeast int
		// refusals: check that refusals come within a second.
		refusals bool
	}{
		{"testdata/plain-single.yaml", []string{"primary"}, 2352, true},
		{"testdata/plain-backup.yaml", []string{"primary", "backup"}, 3564, false},
	} {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			simRow, real, summary, admin := bothWithSummary(t, c.file, c.providers...)
			ok, timedOut := real[report.OK.String()], real[report.TimedOut.String()]
			if ok < c.okAtLeast || timedOut > 10 {
				t.Errorf("answered %d (want at least %d), timed out %d (want at most 10): %v", ok, c.okAtLeast, timedOut, real)
			}
			for _, col := range []report.Outcome{report.OK, report.Shed, report.TimedOut} {
				s, r := simRow.Counts[col], real[col.String()]
				if math.Abs(float64(r-s)) > 0.05*float64(max(s, 20)) {
					t.Errorf("%s: simulated %d, real %d: more than 5%% apart", col, s, r)
				}
			}
			if !c.refusals {
				return
			}
			var simRefused report.Samples
			for _, s := range simRow.Refused {
				simRefused = append(simRefused, s...)
			}
			// The gateway's own count of what it refused for want of a
			// provider, and of the calls it answered early.
			unavailable, err := metricSum(admin, "sluice_requests_total", `reason="no_healthy_target"`)
			if err != nil {
				t.Fatal(err)
			}
			early, err := metricSum(admin, "sluice_requests_total", `reason="provider_too_slow"`)
			if err != nil {
				t.Fatal(err)
			}
			shed, refusedP99 := real[report.Shed.String()], summary.RefusedMs["p99"]
			t.Logf("answered %d, timed out %d, shed %d (the gateway: %.0f refused no_healthy_target, %.0f answered early provider_too_slow)",
				ok, timedOut, shed, unavailable, early)
			t.Logf("refusals (no call made) p50 %.0f ms, p99 %.0f ms, max %.0f ms (simulated p50 %v, p99 %v); every shed answer p50 %.0f ms, p99 %.0f ms",
				summary.RefusedMs["p50"], refusedP99, summary.RefusedMs["max"], simRefused.Quantile(.5), simRefused.Quantile(.99),
				summary.RejectionMs["p50"], summary.RejectionMs["p99"])
			if unavailable < 0.5*float64(shed) || refusedP99 > 1000 {
				t.Errorf("refusals p99 %.0f ms, %.0f of %d shed refused no_healthy_target: want most of the slow minute refused, 99 %% within a second",
					refusedP99, unavailable, shed)
			}
		})
	}
}
