package sim

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// The seed's figures, as its text states them, by the minute of the ramp
// they belong to (minute N is N-1:00 to N:00; "at the two-minute mark"
// is the end of minute 2). The simulator's are set beside them in
// docs/SIMULATOR.md by seed002ArticleTable:
//
//	SLUICE_WRITE_SEED002=1 go test ./internal/sim -run TestSeed002Ramp
//
// rewrites the block between the seed002:article markers there.
const (
	seed002QueueAt4      = 347                     // waiting at 4:00, before
	seed002P99BeforeRamp = 420 * time.Millisecond  // TTFT p99 at 120 req/s
	seed002P99At2        = 6100 * time.Millisecond // TTFT p99 at 2:00, before
	seed002RetryShare5   = 0.35                    // +90 req/s on 260, before, by minute 5
	seed002Retries5      = 90.0                    // retries/s, before, by minute 5
	seed002MeanAt4       = 210 * time.Millisecond  // mean TTFT "four minutes in", before
	seed002AfterRetries  = 12.0                    // retries/s at minute 5, after
	seed002AfterP99      = 640 * time.Millisecond  // interactive TTFT p99 at minute 5, after
	seed002AfterReject   = 15 * time.Millisecond   // time to rejection, after
)

// seed002Cells are the seed's figures for one minute, "" where it states
// none.
type seed002Cells struct {
	queue, mean, nodeMean, p99, retries   string // before
	timedOut                              string
	afterQueue, afterReject, afterRetries string
	afterP99, afterInteractiveShed        string
}

var seed002Seed = [6]seed002Cells{
	{queue: "8 (before the ramp)", mean: "190 ms (before the ramp)", p99: "420 ms (before the ramp)", timedOut: "none (error panel flat)"},
	{p99: "6.1 s", timedOut: "none (error panel flat)"},
	{p99: "past 8 s", timedOut: "none (error panel flat)"},
	{queue: "347", nodeMean: "210 ms"},
	{p99: "past 8 s", retries: "+90/s, 35 % (of 260/s)", timedOut: "all classes at once"},
	{queue: "still climbing"},
}

func init() {
	for i := range seed002Seed {
		c := &seed002Seed[i]
		c.afterQueue, c.afterReject, c.afterInteractiveShed = "≤ 150", "< 15 ms", "0 (untouched)"
	}
	seed002Seed[4].afterRetries = "+12/s, 4.6 %"
	seed002Seed[4].afterP99 = "640 ms"
}

// queueAt is the requests waiting (gateway and node) at the instant at,
// or at the last sample before it (the run's last second has none at
// its end).
func queueAt(s *Series, at time.Duration) (int, bool) {
	q, ok := 0, false
	for _, p := range s.Points {
		if p.At > at {
			break
		}
		q, ok = p.Queued+p.Upstream, at-p.At < time.Second
	}
	return q, ok
}

// meanTTFT is the mean of a minute's interactive first tokens (answered
// requests, from their first attempt).
func meanTTFT(m *report.Minute) time.Duration {
	if len(m.TTFT) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range m.TTFT {
		sum += d
	}
	return sum / time.Duration(len(m.TTFT))
}

func ms(d time.Duration) string {
	switch {
	case d == report.Unreached:
		return "past 8 s"
	case d == 0:
		return "-"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func pair(seed, sim string) string {
	if seed == "" {
		seed = "·"
	}
	return seed + " / " + sim
}

// seed002ArticleTable sets the seed's figures beside the simulator's,
// minute by minute, for "before" and "after" (and "after" with its
// clients' retries off).
func seed002ArticleTable(before, after, afterNoRetry *report.Row, beforeSeries *Series) string {
	var b bytes.Buffer
	fmt.Fprintln(&b, "Before (no admission control; backoff 1, 2, 4 s without jitter). Each cell is the seed's figure / the simulator's; · where the seed states none. TTFT is interactive requests', from their first attempt, except in the node's own column: from the moment the node starts the call, its queue left out, which is what the seed's mean leaves out.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| minute | demand/s | queue at the minute's end | TTFT mean | TTFT mean, the node's own | TTFT p99 | retries | attempts timed out |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|")
	for i := range min(6, len(before.Timeline.Minutes)) {
		m, c := &before.Timeline.Minutes[i], seed002Seed[i]
		q, _ := queueAt(beforeSeries, time.Duration(i+1)*time.Minute)
		timedOut := m.TimedOut[0] + m.TimedOut[1] + m.TimedOut[2]
		fmt.Fprintf(&b, "| %d | %.0f | %s | %s | %s | %s | %s | %s |\n", i+1, float64(m.Demand)/60,
			pair(c.queue, fmt.Sprint(q)), pair(c.mean, ms(meanTTFT(m))), pair(c.nodeMean, ms(m.MeanNodeTTFT())), pair(c.p99, ms(m.TTFTQuantile(.99))),
			pair(c.retries, fmt.Sprintf("+%.0f/s, %.1f %%", float64(m.Retries)/60, 100*m.RetryShare())),
			pair(c.timedOut, fmt.Sprint(timedOut)))
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "After (the seed's fix: a queue of 150, priorities, a cap at the node's batch, jittered retries). The last column is the same policy with its clients' retries off.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| minute | peak queue (gateway + node) | rejection p99 | retries | interactive TTFT p99 | interactive shed | background shed | interactive TTFT p99, retries off |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|")
	for i := range min(6, len(after.Timeline.Minutes), len(afterNoRetry.Timeline.Minutes)) {
		m, n, c := &after.Timeline.Minutes[i], &afterNoRetry.Timeline.Minutes[i], seed002Seed[i]
		reject := "-"
		if len(m.Rejection) > 0 {
			reject = fmt.Sprintf("%.1f ms", float64(m.Rejection.Quantile(.99))/float64(time.Millisecond))
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %d | %s |\n", i+1,
			pair(c.afterQueue, fmt.Sprint(m.PeakQueue)), pair(c.afterReject, reject),
			pair(c.afterRetries, fmt.Sprintf("+%.0f/s, %.1f %%", float64(m.Retries)/60, 100*m.RetryShare())),
			pair(c.afterP99, ms(m.TTFTQuantile(.99))), pair(c.afterInteractiveShed, fmt.Sprint(m.Shed(1))),
			m.Shed(2), ms(n.TTFTQuantile(.99)))
	}
	return b.String()
}

// writeSeed002Article replaces the generated block in docs/SIMULATOR.md.
func writeSeed002Article(t *testing.T, table string) {
	t.Helper()
	const path = "../../docs/SIMULATOR.md"
	const begin = "<!-- seed002:article:begin"
	const end = "<!-- seed002:article:end -->"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %s ... %s block", path, begin, end)
	}
	i += strings.Index(s[i:], "-->") + len("-->\n")
	s = s[:i] + table + s[j:]
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote the seed 002 table in %s", path)
}
