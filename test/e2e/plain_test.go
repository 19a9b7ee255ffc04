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
func TestPlainConfigSeed000(t *testing.T) {
	if os.Getenv("SLUICE_E2E_LONG") == "" {
		t.Skip("real-time brownouts (3.5 min); set SLUICE_E2E_LONG=1 to run them")
	}
	for _, c := range []struct {
		file      string
		providers []string
		okAtLeast int
	}{
		{"testdata/plain-single.yaml", []string{"primary"}, 2376},
		{"testdata/plain-backup.yaml", []string{"primary", "backup"}, 3564},
	} {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			simRow, real := both(t, c.file, c.providers...)
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
		})
	}
}
