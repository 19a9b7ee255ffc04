// Package e2e holds tests that run Sluice as real processes.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
	"github.com/sluice-gw/sluice/internal/sim"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// sluiceBuild builds the binary once per test binary run.
var sluiceBuild procs.Build

func buildSluice(t *testing.T) string {
	t.Helper()
	bin, err := sluiceBuild.Path(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestMain removes the built binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	sluiceBuild.Remove()
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := procs.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// start runs a process until the test ends, its output kept in memory,
// and returns once check passes (nil: at once).
func start(t *testing.T, check procs.Check, name string, args ...string) *procs.Proc {
	t.Helper()
	return runUntilEnd(t, procs.Spec{Path: name, Args: args, Ready: check})
}

// runUntilEnd runs s until the test ends and stops it by its own PID: an
// interrupt (sluice serve skips its drain delay for one), then a kill
// after s.Grace (5 s unless set). A process that exits or is not ready
// in time fails the test with the tail of its output.
func runUntilEnd(t *testing.T, s procs.Spec) *procs.Proc {
	t.Helper()
	if s.Name == "" {
		s.Name = filepath.Base(s.Path)
		if len(s.Args) > 0 {
			s.Name += " " + s.Args[0]
		}
	}
	if s.StopSignal == nil {
		s.StopSignal = os.Interrupt
	}
	p, err := procs.Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

// ready passes once GET url answers 2xx: a mock's /stats, a gateway's
// /readyz.
func ready(url string) procs.Check { return procs.HTTPOK(url) }

// await fails the test unless c passes for p within d.
func await(t *testing.T, p *procs.Proc, d time.Duration, c procs.Check) {
	t.Helper()
	if err := p.Await(context.Background(), d, c); err != nil {
		t.Fatal(err)
	}
}

// both runs one scenario file twice: through sluice sim, and through
// real processes (sluice serve, one sluice mock per provider, sluice load)
// on loopback. The file may use ${LISTEN}, ${ADMIN} and ${<PROVIDER>}
// (upper case) for addresses. It returns the simulated row and the real
// counts, and logs both tables.
func both(t *testing.T, file string, providers ...string) (*report.Row, map[string]int) {
	t.Helper()
	simRow, counts, _, _ := bothWithSummary(t, file, providers...)
	return simRow, counts
}

// bothWithSummary is both, also returning sluice load's whole summary
// and the gateway's admin address (the processes run until the test
// ends, so its /metrics can still be read).
func bothWithSummary(t *testing.T, file string, providers ...string) (*report.Row, map[string]int, report.Summary, string) {
	t.Helper()
	bin := buildSluice(t)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// A run whose load generator fell behind its own schedule measured the
	// machine (another process held the CPU), not the gateway: its timing
	// and the hedges that timing sets off cannot be compared with the
	// simulator's. It is run once more; a second stall is judged as it is.
	var (
		summary report.Summary
		loadOut []byte
		admin   string
		simRow  *report.Row
	)
	for try := 1; ; try++ {
		var f *scenario.File
		summary, loadOut, admin, f = runReal(t, bin, raw, file, providers)
		if simRow == nil {
			res, err := sim.Run(f, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			simRow = res.Rows[0]
		}
		if summary.LagMs <= lagLimitMs || try == 2 {
			break
		}
		t.Logf("arrivals fell %.0f ms behind schedule: the machine stalled the load generator; measuring again", summary.LagMs)
	}
	var table bytes.Buffer
	report.WriteTable(&table, []*report.Row{simRow})
	t.Logf("simulated:\n%s\nreal (sluice load):\n%s", table.String(), loadOut)
	// The gateway's own second calls and probes (read from its /metrics
	// by sluice load) must agree with the simulator's engine too.
	if sim, real := simRow.Extra, summary.ExtraCalls; math.Abs(float64(real-sim)) > 0.25*float64(sim)+10 {
		t.Errorf("extra calls (hedges, retries, rescues, probes): simulated %d, real %d", sim, real)
	}
	return simRow, summary.Counts, summary, admin
}

// lagLimitMs is how far behind schedule the load generator's arrivals may
// fall before a run is taken to have measured the machine (loadgen's
// lagWarning).
const lagLimitMs = 100

// runReal runs file's scenario (raw, its text) in real processes (the
// gateway, a mock per provider, sluice load) on fresh addresses, and
// returns the load's summary, its output, the gateway's admin address
// and the scenario as run.
func runReal(t *testing.T, bin string, raw []byte, file string, providers []string) (report.Summary, []byte, string, *scenario.File) {
	t.Helper()
	listen, admin := freeAddr(t), freeAddr(t)
	subst := []string{"${LISTEN}", listen, "${ADMIN}", admin}
	addrs := map[string]string{}
	for _, p := range providers {
		addrs[p] = freeAddr(t)
		subst = append(subst, "${"+strings.ToUpper(p)+"}", addrs[p])
	}
	path := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(path, []byte(strings.NewReplacer(subst...).Replace(string(raw))), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}

	// The gateway first, then the mocks just before the load, so their
	// brownout windows (timed from their start) line up with the load's
	// clock as closely as process starts allow.
	serve := start(t, ready("http://"+admin+"/readyz"), bin, "serve", "--config", path)
	var mocks []*procs.Proc
	for _, p := range providers {
		mocks = append(mocks, start(t, nil, bin, "mock", "--scenario", path, "--provider", p, "--listen", addrs[p], "--grace", "1s"))
	}
	for i, p := range providers {
		await(t, mocks[i], 10*time.Second, ready("http://"+addrs[p]+"/stats"))
	}
	jsonPath := filepath.Join(t.TempDir(), "load.json")
	ctx, cancel := context.WithTimeout(context.Background(), f.Scenario.Duration+2*time.Minute)
	defer cancel()
	load := exec.CommandContext(ctx, bin, "load", path, "--target", "http://"+listen, "--json", jsonPath, "--quiet",
		"--metrics", "http://"+admin+"/metrics")
	loadOut, err := load.CombinedOutput()
	if err != nil {
		var mockOuts []string
		for _, m := range mocks {
			mockOuts = append(mockOuts, m.Output())
		}
		t.Fatalf("sluice load: %v\n%s\nserve:\n%s\nmocks:\n%v", err, loadOut, serve.Output(), mockOuts)
	}
	return readLoadReport(t, jsonPath), loadOut, admin, f
}

// readLoadReport reads the one row of a sluice load --json report.
func readLoadReport(t *testing.T, path string) report.Summary {
	t.Helper()
	var rows []report.Summary
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("load report: %v\n%s", err, data)
	}
	return rows[0]
}

// metricSum sums the series on admin's /metrics whose line starts with
// prefix and holds every one of labels (0 when there are none).
func metricSum(admin, prefix string, labels ...string) (float64, error) {
	return metricSumAuth(admin, "", prefix, labels...)
}

// metricSumAuth is metricSum on an admin listener that wants a token
// (admin.token_env set); "" sends none.
func metricSumAuth(admin, token, prefix string, labels ...string) (float64, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+admin+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics on %s: %s", admin, resp.Status)
	}
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
next:
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		for _, want := range labels {
			if !strings.Contains(l, want) {
				continue next
			}
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum, sc.Err()
}

// within10pc reports whether real is within 10 % of simulated.
func within10pc(sim, real int) bool { return math.Abs(float64(real-sim)) <= 0.10*float64(sim) }

// The simulator has to tell the truth: one scenario, once simulated and
// once through real processes, must agree on ok, shed and timedOut
// within 10 %.
func TestSimulatorAgreesWithRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 10 s")
	}
	simRow, real := both(t, "testdata/agreement.yaml", "up")
	for _, col := range []report.Outcome{report.OK, report.Shed, report.TimedOut} {
		s, r := simRow.Counts[col], real[col.String()]
		if s < 50 {
			t.Fatalf("%s: the simulation has only %d; the scenario should put hundreds in each column", col, s)
		}
		if !within10pc(s, r) {
			t.Errorf("%s: simulated %d, real %d: more than 10%% apart", col, s, r)
		}
	}
}
