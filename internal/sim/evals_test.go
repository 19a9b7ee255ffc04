package sim

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// Seed 004's trade-off: during a brownout the primary can still answer
// in time, the backup is faster but wrong 40 % of the time. Failing over
// answers as many requests, and far fewer correctly; with evals the
// backup is degraded and users stay on the slow, right primary.
func TestSeed004EvalsKeepUsersOnTheRightProvider(t *testing.T) {
	rows := byName(simulate(t, "../../scenarios/evals/seed004.yaml", Options{}).Rows)
	alone, plain, withEvals := rows["primary only"], rows["failover, no evals"], rows["failover, evals"]
	for _, r := range []*report.Row{alone, plain, withEvals} {
		if !r.Graded {
			t.Fatalf("%s: not graded", r.Name)
		}
	}
	t.Logf("ok/correct: alone %d/%d, failover %d/%d, evals %d/%d", alone.Counts[report.OK], alone.Correct,
		plain.Counts[report.OK], plain.Correct, withEvals.Counts[report.OK], withEvals.Correct)
	if plain.Counts[report.OK] != withEvals.Counts[report.OK] {
		t.Errorf("answered %d without evals, %d with: the brownout leaves the primary in reach of every user", plain.Counts[report.OK], withEvals.Counts[report.OK])
	}
	if float64(withEvals.Correct) < 1.25*float64(plain.Correct) {
		t.Errorf("correct answers: %d with evals, %d without; want at least 25 %% more", withEvals.Correct, plain.Correct)
	}
	if withEvals.EvalDegraded != 1 || plain.EvalDegraded != 0 {
		t.Errorf("eval degradations: %d with evals, %d without", withEvals.EvalDegraded, plain.EvalDegraded)
	}
	if p50 := withEvals.Latency[1].Quantile(.5); p50 <= plain.Latency[1].Quantile(.5) {
		t.Errorf("latency p50 %v with evals: the right answers are the slow ones", p50)
	}
	var b bytes.Buffer
	report.WriteTable(&b, []*report.Row{plain})
	if !strings.Contains(b.String(), "correct/s") {
		t.Errorf("the table has no correct column:\n%s", b.String())
	}
}

// With the primary out of users' reach, a degraded backup is the last
// resort: nobody is refused for the evals' sake.
func TestSeed004OutageDegradedBackupStillServes(t *testing.T) {
	rows := byName(simulate(t, "../../scenarios/evals/seed004-outage.yaml", Options{}).Rows)
	plain, withEvals := rows["failover, no evals"], rows["failover, evals"]
	if withEvals.Counts[report.OK] < plain.Counts[report.OK] || withEvals.Counts[report.Shed] != 0 || withEvals.Counts[report.TimedOut] != 0 {
		t.Errorf("with evals: %v; without: %v", withEvals.Counts, plain.Counts)
	}
	if withEvals.Correct < plain.Correct {
		t.Errorf("correct %d with evals, %d without", withEvals.Correct, plain.Correct)
	}
}

func byName(rows []*report.Row) map[string]*report.Row {
	m := map[string]*report.Row{}
	for _, r := range rows {
		m[r.Name] = r
	}
	return m
}
