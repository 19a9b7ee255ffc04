package sim

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// Streams that break after their first token are continued on the
// fallback, as the gateway continues them (the core's Engine.Continue):
// none fails. With continuation off everywhere, they fail.
func TestBrokenStreamsContinued(t *testing.T) {
	res := simulate(t, "testdata/midstream.yaml", Options{})
	for _, r := range res.Rows {
		c := r.Counts
		if c[report.Failed] != 0 || c[report.OK] == 0 {
			t.Errorf("%s: %d ok, %d failed; want every broken stream continued", r.Name, c[report.OK], c[report.Failed])
		}
	}
}

func TestBrokenStreamsFailWithoutContinuation(t *testing.T) {
	res := simulate(t, "testdata/midstream-off.yaml", Options{})
	for _, r := range res.Rows {
		if r.Counts[report.Failed] == 0 {
			t.Errorf("%s: no stream failed; the scenario breaks streams that nothing continues", r.Name)
		}
	}
}
