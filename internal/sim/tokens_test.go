package sim

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// The token family (scenarios/tokens): keys, budgets, the large-context
// lane and degradation, each against its scenario's own baseline.

// loadTokens loads scenarios/tokens/NAME.yaml, letting the test change
// its traffic first.
func loadTokens(t *testing.T, name string, adjust func(c *scenario.Clients)) *scenario.File {
	t.Helper()
	f, err := scenario.Load("../../scenarios/tokens/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	if adjust != nil {
		adjust(&f.Scenario.Clients)
	}
	return f
}

func runRows(t *testing.T, f *scenario.File) map[string]*report.Row {
	t.Helper()
	res, err := Run(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]*report.Row{}
	for _, r := range res.Rows {
		rows[r.Name] = r
	}
	return rows
}

func stream(t *testing.T, r *report.Row, name string) *report.StreamRow {
	t.Helper()
	s := r.Stream(name)
	if s == nil {
		t.Fatalf("%s: no stream %q", r.Name, name)
	}
	return s
}

// (a) A few 20k-token prompts among chats: with a lane sized to the
// provider, the chats' p99 TTFT stays near what it is with no large
// prompts at all, and is far better than without a lane.
func TestLargeContextLane(t *testing.T) {
	quiet := runRows(t, loadTokens(t, "large-context", func(c *scenario.Clients) {
		c.Streams[0].Rate = []scenario.RateStep{{RPS: 0}}
	}))
	base := stream(t, quiet["no lane"], "chat").TTFT.Quantile(.99)
	rows := runRows(t, loadTokens(t, "large-context", nil))
	p99 := func(policy string) time.Duration { return stream(t, rows[policy], "chat").TTFT.Quantile(.99) }
	none, def, sized := p99("no lane"), p99("lane"), p99("lane, 4 in flight")
	t.Logf("chat TTFT p99: no large prompts %v; with them: no lane %v, lane (defaults) %v, lane of 4 %v", base, none, def, sized)
	t.Logf("large prompts answered: no lane %d, lane of 4 %d of 30",
		stream(t, rows["no lane"], "large").Counts[report.OK], stream(t, rows["lane, 4 in flight"], "large").Counts[report.OK])
	if sized > base*5/4 {
		t.Errorf("lane of 4: chat p99 TTFT %v, more than 25%% above the %v without large prompts", sized, base)
	}
	if none < 2*sized {
		t.Errorf("no lane: chat p99 TTFT %v, want the large prompts to at least double it (lane: %v)", none, sized)
	}
	for _, r := range rows {
		if n := stream(t, r, "chat").Counts[report.OK]; n != stream(t, r, "chat").Counts.Total() {
			t.Errorf("%s: %d of %d chats answered", r.Name, n, stream(t, r, "chat").Counts.Total())
		}
	}
	// The lane's default share (a quarter of admission.max_in_flight, at
	// least 64) is above this provider's 16 slots: with defaults the
	// lane changes nothing here. Logged above; a known gap of the
	// default, not asserted.
}

// (b) Tenant a floods at ten times its rate. Without budgets tenant b
// loses answers with it; with a budget on a's key, a's excess is
// answered 429 and b loses far fewer.
//
// The target is that b moves by at most 1 percentage point. The
// budgets do not get there: a budget allows a minute's allowance at
// once, and a's is full when the flood starts, so a is admitted at the
// flood's rate until it is spent. The test holds the budgets to what
// they do (b's loss at most half what it is without them, and 429s
// for a alone) and logs the gap.
func TestTenantFloodBudgets(t *testing.T) {
	calm := runRows(t, loadTokens(t, "tenant-flood", func(c *scenario.Clients) {
		c.Rate = []scenario.RateStep{{RPS: 5}}
	}))
	f := loadTokens(t, "tenant-flood", nil)
	rows := runRows(t, f)
	share := func(rows map[string]*report.Row, policy string) float64 {
		return 100 * stream(t, rows[policy], "b").OKShare()
	}
	for _, p := range []string{"no budgets", "key budgets"} {
		if s := share(calm, p); s < 99.9 {
			t.Fatalf("%s without a flood: b answered %.1f%%; the scenario should serve both tenants", p, s)
		}
	}
	lossNone := share(calm, "no budgets") - share(rows, "no budgets")
	lossBudget := share(calm, "key budgets") - share(rows, "key budgets")
	t.Logf("tenant b's ok share moves by %.1f points without budgets, %.1f with key budgets (target: 1)", lossNone, lossBudget)
	if lossNone < 5 {
		t.Errorf("without budgets the flood costs b only %.1f points; the scenario should show the harm", lossNone)
	}
	if lossBudget > 1 {
		t.Errorf("with key budgets b loses %.1f points of its ok share to a's flood, want at most 1 (without budgets: %.1f)", lossBudget, lossNone)
	}
	// The flood against a at its quota, no more: whatever a's own
	// quota costs b is the operator's to size; what a sends beyond it
	// must cost b nothing.
	atQuota := runRows(t, loadTokens(t, "tenant-flood", func(c *scenario.Clients) {
		c.Rate = []scenario.RateStep{{RPS: 5}, {At: 60 * time.Second, RPS: 10}, {At: 120 * time.Second, RPS: 5}}
	}))
	p99 := func(rows map[string]*report.Row, policy string) time.Duration {
		l := append(report.Samples(nil), stream(t, rows[policy], "b").Latency...)
		return l.Quantile(0.99)
	}
	okB := func(rows map[string]*report.Row) int { return stream(t, rows["key budgets"], "b").Counts[report.OK] }
	for _, p := range []string{"no budgets", "key budgets"} {
		t.Logf("%s: b's p99 %v calm, %v with a at its quota, %v under the flood", p, p99(calm, p), p99(atQuota, p), p99(rows, p))
	}
	q, fl := p99(atQuota, "key budgets"), p99(rows, "key budgets")
	if d := math.Abs(float64(fl-q)) / float64(q); d > 0.01 || okB(rows) < okB(atQuota)*99/100 {
		t.Errorf("with key budgets a's flood beyond its quota moves b's p99 by %.1f%% (%v to %v) and its ok count from %d to %d; want at most 1%%",
			100*d, q, fl, okB(atQuota), okB(rows))
	}
	kb := rows["key budgets"]
	if a, b := stream(t, kb, "a"), stream(t, kb, "b"); a.Counts[report.RateLimited] == 0 || b.Counts[report.RateLimited] != 0 {
		t.Errorf("rate limited: a %d, b %d; want a's excess refused at its key, and b never", a.Counts[report.RateLimited], b.Counts[report.RateLimited])
	}
	if kb.Attempts <= kb.Unique {
		t.Errorf("attempts %d for %d requests: a 429 should be retried", kb.Attempts, kb.Unique)
	}
	again := runRows(t, f)
	if !reflect.DeepEqual(again["key budgets"].Streams, kb.Streams) {
		t.Error("two runs of one scenario and seed differ")
	}
}

// (c) Background work under a ramp past capacity: degrading it answers
// more requests than shedding it, and costs interactive work nothing.
func TestDegradeBeatsShedding(t *testing.T) {
	rows := runRows(t, loadTokens(t, "degrade", nil))
	shed, deg := rows["shed"], rows["degrade"]
	t.Logf("answered: shed %d, degrade %d (%d degraded)", shed.Counts[report.OK], deg.Counts[report.OK], deg.Degraded)
	if deg.Counts[report.OK] <= shed.Counts[report.OK] {
		t.Errorf("degrade answered %d, shed %d: degrading should answer more", deg.Counts[report.OK], shed.Counts[report.OK])
	}
	if deg.Degraded == 0 || shed.Degraded != 0 {
		t.Errorf("degraded answers: shed %d, degrade %d", shed.Degraded, deg.Degraded)
	}
	if i, j := stream(t, shed, "interactive").Counts[report.OK], stream(t, deg, "interactive").Counts[report.OK]; j < i {
		t.Errorf("interactive answers: %d with degrade, %d without", j, i)
	}
	if n := stream(t, deg, "interactive").Degraded; n != 0 {
		t.Errorf("%d interactive answers degraded; only background work may be", n)
	}
}
