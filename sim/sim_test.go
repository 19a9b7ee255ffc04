package sim

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/report"
	"github.com/sluice-gw/sluice/scenario"
)

// seedTable is seed 000's published table (shared/scenarios/reference-
// tables.md): the seed's own code, run as written.
type seedRow struct {
	ok, late, timedOut, shed, lost, crashes, peak int
}

var seedTables = map[float64][]seedRow{
	1: {
		{2380, 0, 0, 0, 1200, 2, 402},  // unbounded
		{2380, 0, 1200, 0, 0, 0, 300},  // timeout only
		{2380, 0, 200, 1000, 0, 0, 50}, // limit 50 + timeout
		{2319, 0, 56, 1205, 0, 0, 41},  // AIMD + timeout
	},
	2: {
		{4760, 0, 0, 0, 2400, 3, 404},
		{4760, 0, 0, 0, 2400, 3, 404},
		{4760, 0, 200, 2200, 0, 0, 50},
		{4579, 0, 96, 2485, 0, 0, 81},
	},
}

// within2pc: every cell within 2 % of the seed's (or, for a seed value of
// zero, exactly zero).
func within2pc(got, want int) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(float64(got-want)) <= 0.02*float64(want)
}

func TestLittlesLawMatchesSeedTables(t *testing.T) {
	f, err := scenario.Load("../scenarios/littles-law.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for scale, want := range seedTables {
		res, err := Run(f, Options{RPSScale: scale})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			r := res.Rows[i]
			c := r.Counts
			got := seedRow{c[report.OK], c[report.Late], c[report.TimedOut], c[report.Shed], c[report.Lost], r.Crashes, r.Peak}
			cells := []struct {
				name      string
				got, want int
			}{
				{"ok", got.ok, w.ok}, {"late", got.late, w.late}, {"timedOut", got.timedOut, w.timedOut},
				{"shed", got.shed, w.shed}, {"lost", got.lost, w.lost}, {"crashes", got.crashes, w.crashes}, {"peak", got.peak, w.peak},
			}
			for _, cell := range cells {
				if !within2pc(cell.got, cell.want) {
					t.Errorf("%g×20 req/s, %s: %s = %d, seed says %d (more than 2%% off)", scale, r.Name, cell.name, cell.got, cell.want)
				}
			}
			if c[report.Failed] != 0 {
				t.Errorf("%s: %d failed; the seed has no failures", r.Name, c[report.Failed])
			}
		}
	}
}

// The same scenario and seed give byte-identical output: table, CSV and
// plot.
func TestDeterministic(t *testing.T) {
	for _, path := range []string{"../scenarios/littles-law.yaml", "testdata/mixed.yaml"} {
		t.Run(path, func(t *testing.T) {
			var outs [2][]byte
			for i := range outs {
				f, err := scenario.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				res, err := Run(f, Options{})
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				report.WriteTable(&b, res.Rows)
				WriteCSV(&b, res.Series)
				WritePlot(&b, "t", res.Series, 1e9)
				outs[i] = b.Bytes()
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Fatal("two runs of the same scenario and seed differ")
			}
		})
	}
}

// A scenario exercising queueing, priorities, retries, Poisson arrivals,
// streaming and upstream capacity.
func TestMixedScenario(t *testing.T) {
	f, err := scenario.Load("testdata/mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Rows[0]
	var b bytes.Buffer
	report.WriteTable(&b, []*report.Row{r})
	t.Logf("\n%s", b.String())
	if r.ByPriority[0][report.Shed] != 0 {
		t.Errorf("critical was shed %d times", r.ByPriority[0][report.Shed])
	}
	bg, in := r.ByPriority[2], r.ByPriority[1]
	if float64(bg[report.Shed])/float64(bg.Total()) <= float64(in[report.Shed])/float64(in.Total()) {
		t.Errorf("background must be shed before interactive: background %v, interactive %v", bg, in)
	}
	if r.Amplification() <= 1 {
		t.Errorf("retry amplification %.2f; jittered retries should add some attempts", r.Amplification())
	}
	if r.Counts[report.OK] == 0 || len(r.TTFT[1]) == 0 {
		t.Error("no answers")
	}
}

// BenchmarkHourAt1000 is the speed target: one simulated hour at 1,000
// req/s (3.6 million requests) through the full policy stack (adaptive
// limit, breaker, priority queue, slow flags, deadlines), beside the same
// hour through a minimal policy (a fixed limit and nothing else) as the
// baseline measured in the same run.
//
//	go test -run '^$' -bench HourAt1000 -benchtime 3x ./sim/
func BenchmarkHourAt1000(b *testing.B) {
	for _, c := range []struct{ name, path string }{
		{"full", "testdata/hour.yaml"},
		{"minimal", "testdata/hour-minimal.yaml"},
	} {
		b.Run(c.name, func(b *testing.B) {
			f, err := scenario.Load(c.path)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				res, err := Run(f, Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.Rows[0].Unique), "requests")
			}
		})
	}
}

// Clients who abandon at patience are never answered late, retried or
// not: a patience event must survive the request's retries.
func TestAbandonedRequestsAreNeverLate(t *testing.T) {
	for _, path := range []string{"../scenarios/brownouts/all-slow.yaml", "testdata/mixed.yaml", "../scenarios/vllm-ramp.yaml"} {
		f, err := scenario.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			if n := r.Counts[report.Late]; n != 0 {
				t.Errorf("%s, %s: %d late answers, but clients abandon at patience", path, r.Name, n)
			}
		}
	}
}

// The brownout scenarios, each "no breaker" against "slow-call breaker +
// failover".
func TestBrownoutScenarios(t *testing.T) {
	run := func(name string) (none, breaker *report.Row) {
		f, err := scenario.Load("../scenarios/brownouts/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows[0], res.Rows[1]
	}
	t.Run("flapping: failover serves more, and far fewer wait out the deadline", func(t *testing.T) {
		none, br := run("flapping")
		if br.Counts[report.OK] <= none.Counts[report.OK] || br.Counts[report.TimedOut]*4 > none.Counts[report.TimedOut] {
			t.Errorf("no breaker %v, breaker %v", none.Counts, br.Counts)
		}
	})
	t.Run("everything slow: shed fast instead of timing out, losing no answers", func(t *testing.T) {
		none, br := run("all-slow")
		if br.Counts[report.Shed] == 0 || br.Counts[report.TimedOut]*4 > none.Counts[report.TimedOut] || br.Counts[report.OK] < none.Counts[report.OK] {
			t.Errorf("no breaker %v, breaker %v", none.Counts, br.Counts)
		}
	})
	t.Run("429 bursts are pacing: the breaker never trips", func(t *testing.T) {
		none, br := run("rate-limited")
		if none.Counts != br.Counts {
			t.Errorf("no breaker %v, breaker %v: a 429 must not trip it", none.Counts, br.Counts)
		}
	})
	t.Run("a thin tail: hedging at p95 fixes p99 for a few percent more calls", func(t *testing.T) {
		none, hedged := run("thin-tail")
		p99 := func(r *report.Row) time.Duration { return append(report.Samples(nil), r.Latency[1]...).Quantile(.99) }
		if p99(hedged)*3 > p99(none) || hedged.Extra == 0 || float64(hedged.Extra) > 0.1*float64(hedged.Unique) {
			t.Errorf("p99 %v without hedging, %v with, for %d extra calls in %d requests", p99(none), p99(hedged), hedged.Extra, hedged.Unique)
		}
	})
	t.Run("a 30% partial brownout stays under the slow rate: the breaker cannot help", func(t *testing.T) {
		// This is the case hedging is for; the breaker rightly stays
		// closed, and the two rows are the same.
		none, br := run("partial")
		if none.Counts != br.Counts || none.Counts[report.TimedOut] == 0 {
			t.Errorf("no breaker %v, breaker %v", none.Counts, br.Counts)
		}
	})
}
