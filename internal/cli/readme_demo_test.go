package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// The README's account of sluice demo, and the demo's table in
// docs/BENCHMARKS.md, say what the simulator says of demo.yaml: the
// simulated rows of the closing table, the plain proxy's users who gave
// up, the queue's peak, the extra calls, and when the brownout runs. The
// simulator is deterministic, so these are checked exactly; the measured
// row and the wall time and memory come from a real run and are not.
// The test only reads: on a difference it prints what the text should
// say. It takes a tenth of a second.
func TestReadmeDemo(t *testing.T) {
	plan := demoPlan{duration: demoDuration, listen: "127.0.0.1:1", admin: "127.0.0.1:2"}
	plan.brownStart, plan.brownEnd = brownout(plan.duration)
	f, err := scenario.Parse(plan.scenarioText("127.0.0.1:3", "127.0.0.1:4"), "demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(f, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]*report.Row{}
	for _, r := range res.Rows {
		rows[r.Name] = r
	}
	with, plain := rows[demoPolicy], rows[plainPolicy]
	if with == nil || plain == nil {
		t.Fatalf("the simulator's rows %v lack %q or %q", res.Rows, demoPolicy, plainPolicy)
	}

	// The closing table's simulated rows, as sluice demo prints them.
	var out bytes.Buffer
	writeDemoSummary(&out, nil, res, 0, "")
	names := []string{"with Sluice (simulated)", "plain proxy (simulated)"}
	want := map[string]string{}
	var block []string
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "policy" && len(block) == 0 {
			block = append(block, line)
		}
		for _, n := range names {
			// The first table's row; the latency table that follows
			// names the policies again.
			if want[n] == "" && strings.HasPrefix(strings.TrimSpace(line), n+" ") {
				want[n] = line
				block = append(block, line)
			}
		}
	}
	for _, n := range names {
		if want[n] == "" {
			t.Fatalf("sluice demo's summary has no row %q:\n%s", n, out.String())
		}
	}
	for _, doc := range []string{"README.md", "docs/BENCHMARKS.md"} {
		text := readRepoFile(t, doc)
		for _, n := range names {
			got := ""
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), n+" ") {
					got = line
					break
				}
			}
			if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(want[n]), " ") {
				t.Errorf("%s's demo table: the row %q is\n%s\nbut the simulator (sluice demo's own run of demo.yaml) gives\n%s\nThe simulated rows should read:\n%s",
					doc, n, got, want[n], strings.Join(block, "\n"))
			}
		}
	}

	// The prose around the table.
	readme := strings.Join(strings.Fields(readRepoFile(t, "README.md")), " ")
	total := plain.Counts.Total() // the simulation's requests, the same for both policies
	_, gwPeak, _ := with.Timeline.Peak(len(with.Timeline.Minutes))
	seconds := func(d time.Duration) int { return int(d / time.Second) }
	words := map[int]string{5: "five", 10: "ten", 15: "fifteen", 20: "twenty", 25: "twenty-five", 30: "thirty"}
	brownFor, ok := words[seconds(plan.brownEnd-plan.brownStart)]
	if !ok {
		brownFor = fmt.Sprintf("%d", seconds(plan.brownEnd-plan.brownStart))
	}
	if with.Counts[report.OK] != total {
		t.Errorf("README.md, \"The demo\", says every request is answered within patience with Sluice; in the simulation %d of %d are", with.Counts[report.OK], total)
	}
	for _, c := range []struct{ what, want string }{
		{"how long the brownout lasts", "browns out the primary for " + brownFor + " seconds"},
		{"when the brownout runs", fmt.Sprintf("%d s to %d s of the default %d s", seconds(plan.brownStart), seconds(plan.brownEnd), seconds(plan.duration))},
		{"the plain proxy's users who gave up", fmt.Sprintf("%s of %s in the simulation", thousands(plain.Counts[report.TimedOut]), thousands(total))},
		{"the queue's peak", fmt.Sprintf("%d deep at its peak in the simulation", gwPeak)},
		{"the extra calls", fmt.Sprintf("%.1f %% extra calls", 100*float64(with.Extra)/float64(with.Unique))},
	} {
		if !strings.Contains(readme, c.want) {
			t.Errorf("README.md, \"The demo\": %s: the simulator says %q, which the text does not", c.what, c.want)
		}
	}
	t.Logf("simulated: %s; %s; queue peak %d; brownout %v to %v", strings.Join(strings.Fields(want[names[0]]), " "), strings.Join(strings.Fields(want[names[1]]), " "), gwPeak, plan.brownStart, plan.brownEnd)
}

// thousands writes n with commas, as the prose does: 4,800.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
