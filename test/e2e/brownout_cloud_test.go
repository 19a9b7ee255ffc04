package e2e

import (
	"path/filepath"
	"testing"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// The cross-vendor brownout, failed over across clouds: an OpenAI
// primary, a Bedrock backup (Converse, event-stream framing, SigV4) that
// browns out itself for four of the primary's ten slow seconds, and a
// Gemini backup behind it. Every client still gets an OpenAI chat stream,
// as many are answered within patience as with one backup of the same
// kind, and each backup answered its share through translation. It runs
// with the long suite (CI runs it by name):
//
//	SLUICE_E2E_LONG=1 go test ./test/e2e -run AcrossClouds -v
func TestBrownoutFailsOverAcrossCloudsInRealProcesses(t *testing.T) {
	needLong(t, "runs real processes for about 35 s")
	// sluice serve inherits these: the Bedrock provider signs with the
	// AWS credential chain, which reads the environment first and, here,
	// no file of this machine; the Gemini provider sends its key.
	t.Setenv("SLUICE_E2E_GEMINI_KEY", "gemini-e2e-key")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSLUICEE2E")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "sluice-e2e-secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	simRow, real, _, admin := bothWithSummary(t, "testdata/brownout-cross-cloud.yaml", "primary", "bedrock", "gemini")
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
	served := map[string]float64{}
	for _, p := range []string{"primary", "bedrock", "gemini"} {
		n, err := metricSum(admin, `sluice_upstream_responses_total{`, `code="200"`, `provider="`+p+`"`)
		if err != nil {
			t.Fatal(err)
		}
		served[p] = n
	}
	t.Logf("of %d OpenAI requests: primary answered %.0f, Bedrock %.0f, Gemini %.0f", total, served["primary"], served["bedrock"], served["gemini"])
	// The Bedrock backup carries the primary's slow seconds but four
	// (about 720 requests), Gemini those four (about 480).
	if served["bedrock"] < 0.1*float64(total) || served["gemini"] < 0.05*float64(total) {
		t.Errorf("want Bedrock to answer at least a tenth and Gemini a twentieth of %d requests: %v", total, served)
	}
}
