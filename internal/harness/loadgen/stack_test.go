package loadgen

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/sim/report"
)

// TestAgainstTheGateway runs testdata/stack.yaml (two seconds, a ramp to
// 120/s, streaming, jittered retries) against the real gateway in front
// of the mock provider, with limits small enough that the gateway sheds.
func TestAgainstTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	m := mock.New(mock.Config{Seed: 3, TTFT: 100 * ms, TPOT: 5 * ms})
	base, stop, err := m.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	t.Setenv("SLUICE_TEST_LOAD_CRITICAL", "load-critical-key")
	cfg := config.Default(base)
	cfg.Admission.CriticalKeysEnv = "SLUICE_TEST_LOAD_CRITICAL"
	cfg.Admission.MaxInFlight = 6
	cfg.Admission.Queue.MaxDepth = 8
	cfg.Admission.Queue.MaxWait = config.Duration(300 * ms)
	cfg.Admission.Priorities.Critical.Reserved = 2
	cfg.Admission.Priorities.Interactive.MaxQueued = 4
	cfg.Admission.Priorities.Background.MaxQueued = 2
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()

	f := loadScenario(t, "stack.yaml", nil)
	start := time.Now()
	row := mustRun(t, f, Options{Target: srv.URL, CriticalKey: "load-critical-key"})
	took := time.Since(start)

	var out testWriter
	report.WriteTable(&out, []*report.Row{row})
	t.Logf("took %v\n%s%s", took, out, summaryLine(row))

	c := row.Counts
	if row.Name != "stack" || row.Unique < 100 || c[report.OK] == 0 || c[report.Shed] == 0 {
		t.Errorf("want OK and shed answers from some 150 requests; got %d unique, counts %v", row.Unique, c)
	}
	if c[report.Lost]+c[report.Failed] > 0 {
		t.Errorf("lost or failed answers from a healthy stack: %v", c)
	}
	if row.Attempts <= row.Unique {
		t.Errorf("attempts %d for %d requests; jittered retries after sheds should add some", row.Attempts, row.Unique)
	}
	var rej, ttft int
	for p := range 3 {
		rej += len(row.Rejection[p])
		ttft += len(row.TTFT[p])
		if row.ByPriority[p].Total() == 0 {
			t.Errorf("no %s requests", report.Priorities[p])
		}
	}
	if rej == 0 || ttft != c[report.OK] {
		t.Errorf("%d rejection samples, %d TTFT samples for %d OK", rej, ttft, c[report.OK])
	}
	// Critical may use the reserved slots and is never shed.
	if n := row.ByPriority[0][report.Shed]; n != 0 {
		t.Errorf("%d critical requests shed", n)
	}
	if st := m.Stats(); st.PeakInFlight > int64(cfg.Admission.MaxInFlight+cfg.Admission.Priorities.Critical.Reserved) {
		t.Errorf("mock saw %d in flight, above the gateway's limit", st.PeakInFlight)
	}
	if took > 6*time.Second {
		t.Errorf("run took %v, want about 2s plus the drain", took)
	}
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }
func (w testWriter) String() string               { return string(w) }
