package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCLIUsageErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no scenario", []string{"--target", "http://127.0.0.1:1"}, "give a scenario file"},
		{"no target", []string{"testdata/basic.yaml"}, "--target is required"},
		{"bad target", []string{"testdata/basic.yaml", "--target", "127.0.0.1:8080"}, "http(s) base URL"},
		{"unknown flag", []string{"testdata/basic.yaml", "--target", "http://x", "--rps", "2"}, "flag provided but not defined"},
		{"bad scale", []string{"testdata/basic.yaml", "--target", "http://x", "--time-scale", "0"}, "must be positive"},
		{"bad cap", []string{"testdata/basic.yaml", "--target", "http://x", "--max-requests", "0"}, "--max-requests must be positive"},
		{"two scenarios", []string{"a.yaml", "b.yaml", "--target", "http://x"}, "one scenario file"},
		{"missing file", []string{"testdata/nope.yaml", "--target", "http://x"}, "nope.yaml"},
		{"not a scenario", []string{"../../config/testdata/minimal.yaml", "--target", "http://x"}, "no scenario: section"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, c.args...)
			if code != 2 || !strings.Contains(errs, c.want) || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want 2 and %q", code, errs, out, c.want)
			}
		})
	}
	if code, _, _ := runCLI(t, "--help"); code != 0 {
		t.Errorf("--help exits %d, want 0", code)
	}
}

func TestCLIRunWritesReport(t *testing.T) {
	g := newFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n%4 == 3 {
			answerShed(w, 0)
			return
		}
		answerOK(w)
	})
	dir := t.TempDir()
	csvPath, jsonPath := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out.json")
	// Flags before and after the scenario; a 1 s scenario at 10/s, ten
	// times faster.
	code, out, errs := runCLI(t, "--target", g.url, "testdata/basic.yaml", "--time-scale", "0.1",
		"--csv", csvPath, "--json", jsonPath, "--quiet")
	// The one note: a time-scaled run that cannot see the gateway's
	// scale says so (timescale.go). A machine too busy to keep the
	// schedule adds its own note about the lag, which is not an error.
	notes := 0
	for _, line := range strings.Split(strings.TrimSpace(errs), "\n") {
		if !strings.Contains(line, "behind schedule") {
			notes++
		}
	}
	if code != 0 || notes != 1 || !strings.Contains(errs, "without --metrics the gateway's own time scale is unchecked") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"policy", "basic", "goodput/s", "TTFT p50", "attempts 10, unique requests 10, retry amplification 1.00", "rejection latency p50"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(csvPath)
	if err != nil || !strings.HasPrefix(string(b), "policy,class,ok,") || !strings.Contains(string(b), "basic,all,8,0,0,2,0,0") {
		t.Errorf("csv %q, %v", b, err)
	}
	var sums []report.Summary
	b, err = os.ReadFile(jsonPath)
	if err == nil {
		err = json.Unmarshal(b, &sums)
	}
	if err != nil || len(sums) != 1 || sums[0].Counts["ok"] != 8 || sums[0].Counts["shed"] != 2 {
		t.Errorf("json %s, %v", b, err)
	}
}

func TestCLIWriteFailureExits1(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	code, out, errs := runCLI(t, "testdata/basic.yaml", "--target", g.url, "--duration", "50ms",
		"--json", filepath.Join(t.TempDir(), "no", "such", "dir.json"))
	if code != 1 || !strings.Contains(errs, "no such file") || !strings.Contains(out, "policy") {
		t.Errorf("exit %d, stderr %q; want the report and then exit 1", code, errs)
	}
}

func TestStatusLine(t *testing.T) {
	var tl tally
	tl.sent.Store(42)
	tl.begin()
	tl.finish(0, 1, report.OK, 0, 0, false)
	tl.finish(0, 1, report.Lost, 0, 0, false)
	line := statusLine(&tl, 1500*time.Millisecond, 9.5, 10)
	for _, want := range []string{"1.5s", "sent 42", "in flight 1", "ok 1", "shed 0", "timedOut 0", "failed 0", "lost 1", "rate 9.5/s (target 10.0/s)"} {
		if !strings.Contains(line, want) {
			t.Errorf("status line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "late") {
		t.Errorf("status line %q shows a zero late count", line)
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
}
