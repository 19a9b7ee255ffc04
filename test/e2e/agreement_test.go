// Package e2e holds tests that run Sluice as real processes.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// buildSluice builds the binary once per test binary run.
func buildSluice(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-e2e")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sluice")
		if out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/sluice").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestMain removes the built binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs a process until the test ends, its output kept in memory.
func start(t *testing.T, name string, args ...string) *bytes.Buffer {
	t.Helper()
	var out bytes.Buffer
	runUntilEnd(t, &out, 5*time.Second, name, args...)
	return &out
}

// runUntilEnd runs a process until the test ends, its output to w, and
// stops it by its own PID: an interrupt, then a kill after grace.
func runUntilEnd(t *testing.T, w io.Writer, grace time.Duration, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			cmd.Process.Kill()
			<-done
		}
	})
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never answered", url)
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
	res, err := sim.Run(f, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	simRow := res.Rows[0]

	// The gateway first, then the mocks just before the load, so their
	// brownout windows (timed from their start) line up with the load's
	// clock as closely as process starts allow.
	serveOut := start(t, bin, "serve", "--config", path)
	waitHTTP(t, "http://"+admin+"/readyz")
	var mockOuts []*bytes.Buffer
	for _, p := range providers {
		mockOuts = append(mockOuts, start(t, bin, "mock", "--scenario", path, "--provider", p, "--listen", addrs[p], "--grace", "1s"))
	}
	for _, p := range providers {
		waitHTTP(t, "http://"+addrs[p]+"/stats")
	}
	jsonPath := filepath.Join(t.TempDir(), "load.json")
	ctx, cancel := context.WithTimeout(context.Background(), f.Scenario.Duration+2*time.Minute)
	defer cancel()
	load := exec.CommandContext(ctx, bin, "load", path, "--target", "http://"+listen, "--json", jsonPath, "--quiet",
		"--metrics", "http://"+admin+"/metrics")
	loadOut, err := load.CombinedOutput()
	if err != nil {
		t.Fatalf("sluice load: %v\n%s\nserve:\n%s\nmocks:\n%v", err, loadOut, serveOut, mockOuts)
	}
	summary := readLoadReport(t, jsonPath)
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

// within10pc reports whether real is within 10 % of simulated.
// metricSum sums the series on admin's /metrics whose line starts with
// prefix and holds every one of labels (0 when there are none).
func metricSum(admin, prefix string, labels ...string) (float64, error) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
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
