// Package e2e holds tests that run Sluice as real processes.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/report"
	"github.com/sluice-gw/sluice/scenario"
	"github.com/sluice-gw/sluice/sim"
)

// buildSluice builds the binary once per test binary run.
func buildSluice(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sluice")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/sluice")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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

// start runs a process until the test ends, stopping it by its own PID.
func start(t *testing.T, name string, args ...string) *bytes.Buffer {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return &out
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

// The simulator has to tell the truth: one scenario, once simulated and
// once through real processes, must agree on ok, shed and timedOut
// within 10 %.
func TestSimulatorAgreesWithRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 10 s")
	}
	bin := buildSluice(t)
	raw, err := os.ReadFile("testdata/agreement.yaml")
	if err != nil {
		t.Fatal(err)
	}
	listen, admin, mockAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	text := strings.NewReplacer("${LISTEN}", listen, "${ADMIN}", admin, "${MOCK}", mockAddr).Replace(string(raw))
	path := filepath.Join(t.TempDir(), "agreement.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}

	// Simulated.
	f, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(f, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	simRow := res.Rows[0]

	// Real: the gateway first, then the mock just before the load, so the
	// mock's brownout window (timed from its start) lines up with the
	// load's clock as closely as two process starts allow.
	serveOut := start(t, bin, "serve", "--config", path)
	waitHTTP(t, "http://"+admin+"/readyz")
	mockOut := start(t, bin, "mock", "--scenario", path, "--provider", "up", "--listen", mockAddr, "--grace", "1s")
	waitHTTP(t, "http://"+mockAddr+"/stats")
	jsonPath := filepath.Join(t.TempDir(), "load.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	load := exec.CommandContext(ctx, bin, "load", path, "--target", "http://"+listen, "--json", jsonPath, "--quiet")
	loadOut, err := load.CombinedOutput()
	if err != nil {
		t.Fatalf("sluice load: %v\n%s\nserve:\n%s\nmock:\n%s", err, loadOut, serveOut, mockOut)
	}
	var rows []report.Summary
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("load report: %v\n%s", err, data)
	}
	real := rows[0].Counts

	var table bytes.Buffer
	report.WriteTable(&table, []*report.Row{simRow})
	t.Logf("simulated:\n%s\nreal (sluice load):\n%s", table.String(), loadOut)
	for _, col := range []report.Outcome{report.OK, report.Shed, report.TimedOut} {
		s, r := simRow.Counts[col], real[col.String()]
		if s < 50 {
			t.Fatalf("%s: the simulation has only %d; the scenario should put hundreds in each column", col, s)
		}
		if math.Abs(float64(r-s)) > 0.10*float64(s) {
			t.Errorf("%s: simulated %d, real %d: more than 10%% apart", col, s, r)
		}
	}
}
