package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// The brownout family (scenarios/brownouts): every scenario has a
// "defaults" row, the plain config (providers, a model, max_in_flight),
// and tuned rows. The defaults must do as well as tuning: within 1 % of
// the best tuned row's answers in the same topology (one provider, or
// with a backup), with at most 0.5 % of requests timed out, and say no
// early: 99 % of the requests refused without reaching a provider are
// refused within a second (lifecycle/hold.go).
func TestBrownoutFamily(t *testing.T) {
	if raceEnabled {
		t.Skip("minutes of one goroutine under the race detector, which can find nothing in it; run without -race: go test ./sim (CI does)")
	}
	for _, c := range []struct {
		file  string
		scale float64
	}{
		{"seed000", 1}, {"seed000", 0.1}, {"seed000", 10},
		{"slowdown-3x", 1}, {"short", 1}, {"long", 1}, {"ramp", 1},
		{"partial", 1}, {"flapping", 1}, {"all-slow", 1}, {"rate-limited", 1},
		{"spike", 1}, {"thin-tail", 1},
	} {
		t.Run(fmt.Sprintf("%s at %g×", c.file, c.scale), func(t *testing.T) {
			rows := simulate(t, "../../scenarios/brownouts/"+c.file+".yaml", Options{RPSScale: c.scale}).Rows
			checked := 0
			for _, d := range rows {
				topo, isDefaults := strings.CutPrefix(d.Name, "defaults")
				if !isDefaults {
					continue
				}
				checked++
				best := bestTuned(rows, topo)
				if best == nil {
					t.Fatalf("%s: no tuned row to compare with", d.Name)
				}
				ok, timedOut := d.Counts[report.OK], d.Counts[report.TimedOut]
				if float64(ok) < 0.99*float64(best.Counts[report.OK]) {
					t.Errorf("%s: %d answered, %q %d: more than 1%% behind", d.Name, ok, best.Name, best.Counts[report.OK])
				}
				if float64(timedOut) > 0.005*float64(d.Unique) {
					t.Errorf("%s: %d of %d timed out, more than 0.5%%", d.Name, timedOut, d.Unique)
				}
				var refused report.Samples
				for _, s := range d.Refused {
					refused = append(refused, s...)
				}
				if p99 := refused.Quantile(.99); p99 > time.Second {
					t.Errorf("%s: refusals p99 %v (of %d), want within a second", d.Name, p99, len(refused))
				}
				t.Logf("%-18s ok %6d (best tuned %6d), timed out %4d of %6d, trips %d, extra calls %.1f%%", d.Name, ok,
					best.Counts[report.OK], timedOut, d.Unique, d.Trips, 100*float64(d.Extra)/float64(d.Unique))
			}
			if checked == 0 {
				t.Fatal("no defaults row")
			}
		})
	}
}

// bestTuned is the tuned row (named "tuned…") of a topology (", backup"
// or "") with the most answers.
func bestTuned(rows []*report.Row, topo string) *report.Row {
	var best *report.Row
	for _, r := range rows {
		if strings.HasPrefix(r.Name, "tuned") && strings.HasSuffix(r.Name, ", backup") == (topo == ", backup") &&
			(best == nil || r.Counts[report.OK] > best.Counts[report.OK]) {
			best = r
		}
	}
	return best
}

// Seed 000's own figures: of the 2,400 requests that could be answered
// (those outside the slow minute), at least 2,352 with one provider, and
// 3,564 of 3,600 with a backup, with at most 10 timed out in both. With
// one provider, the users lost are those who arrive in the second or so
// between the recovery and the verdict of the first probe sent after it:
// holding them for it would mean holding every user of the slow minute
// as long before refusing them, and refusals come within a second.
func TestSeed000Defaults(t *testing.T) {
	rows := policyRows(t, "../../scenarios/brownouts/seed000.yaml", 1)
	for name, want := range map[string]int{"defaults": 2352, "defaults, backup": 3564} {
		r := rows[name]
		if ok, to := r.Counts[report.OK], r.Counts[report.TimedOut]; ok < want || to > 10 {
			t.Errorf("%s: %d answered (want at least %d), %d timed out (want at most 10)", name, ok, want, to)
		}
	}
}

// A spike, and a thin tail, are not brownouts: the default breaker never
// trips, and the gateway makes at most 2 % extra calls.
func TestNoTripOnSpikeOrTail(t *testing.T) {
	for _, f := range []string{"spike", "thin-tail"} {
		d := policyRows(t, "../../scenarios/brownouts/"+f+".yaml", 1)["defaults"]
		if d.Trips != 0 || float64(d.Extra) > 0.02*float64(d.Unique) {
			t.Errorf("%s: %d trips, %d extra calls in %d requests", f, d.Trips, d.Extra, d.Unique)
		}
	}
}

// Hedging at p95 cuts the thin tail's p99 for a few percent more calls.
func TestThinTailHedging(t *testing.T) {
	rows := policyRows(t, "../../scenarios/brownouts/thin-tail.yaml", 1)
	none, hedged := rows["defaults"], rows["tuned, hedge at p95"]
	p99 := func(r *report.Row) time.Duration { return append(report.Samples(nil), r.Latency[1]...).Quantile(.99) }
	if p99(hedged)*3 > p99(none) || hedged.Extra == 0 || float64(hedged.Extra) > 0.1*float64(hedged.Unique) {
		t.Errorf("p99 %v without hedging, %v with, for %d extra calls in %d requests", p99(none), p99(hedged), hedged.Extra, hedged.Unique)
	}
}

// 429s are pacing: no breaker trips on them.
func TestRateLimitsDoNotTrip(t *testing.T) {
	if d := policyRows(t, "../../scenarios/brownouts/rate-limited.yaml", 1)["defaults"]; d.Trips != 0 {
		t.Errorf("%d trips on 429s", d.Trips)
	}
}
