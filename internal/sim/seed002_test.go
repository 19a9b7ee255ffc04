package sim

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// Seed 002's ramp, simulated: the storm its clients make without
// admission control, the seed's fix, and Sluice beyond it, held to the
// seed's table at minute 5.
func TestSeed002Ramp(t *testing.T) {
	if raceEnabled {
		t.Skip("seven policies of one goroutine under the race detector, which can find nothing in it; run without -race: go test ./internal/sim (CI does)")
	}
	const path = "../../scenarios/seed-002.yaml"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Two other readings of the seed's fix: its 150 places as one queue
	// that background is shed from first (interactive and background may
	// each take all of it; a newcomer of a higher class displaces the
	// newest background waiter), and clients that retry a refused
	// request once.
	raw = append(raw, `
    - name: after-one-queue
      gateway:
        admission:
          fail_fast: false
          priorities: {interactive: {max_queued: 150}, background: {max_queued: 150}}
      send_deadline: false
    - name: after-one-retry
      gateway:
        admission: {fail_fast: false}
      retry: {strategy: jittered, max_attempts: 2, base: 1s, cap: 8s}
      send_deadline: false
`...)
	f, err := scenario.Parse(raw, path)
	if err != nil {
		t.Fatal(err)
	}
	// "after" once more with its clients' retries off, to tell the queue's
	// share of its interactive first tokens from retry waiting.
	noRetry, err := f.Policy("after")
	if err != nil {
		t.Fatal(err)
	}
	noRetry.Name, noRetry.Retry = "after-no-retries", &scenario.Retry{Strategy: "none"}
	f.Scenario.Policies = append(f.Scenario.Policies, noRetry)
	res, err := Run(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows, series := map[string]*report.Row{}, map[string]*Series{}
	for i, r := range res.Rows {
		rows[r.Name], series[r.Name] = r, res.Series[i]
	}
	before, after, beyond := rows["before"], rows["after"], rows["beyond"]
	if before == nil || after == nil || beyond == nil {
		t.Fatalf("policies: %v", res.Rows)
	}
	minute := func(r *report.Row) *report.Minute { return &r.Timeline.Minutes[report.Seed002Minute-1] }

	// Before: the node's queue grows without bound and the clients'
	// retries pile on (the seed: 347 waiting at 4:00, +35 % by minute 5).
	if _, _, up := before.Timeline.Peak(report.Seed002Minute); up <= 347 {
		t.Errorf("before: the node's queue peaked at %d, want past the seed's 347", up)
	}
	// The node is calibrated to the seed's queue at 4:00 (the scenario's
	// header). That queue is (232 - capacity)^2 / 2a: each req/s of
	// capacity moves it by about 40, so ±50 % is ±2 % of the node, the
	// most a change of rules elsewhere should move it.
	if q, ok := queueAt(series["before"], 4*time.Minute); !ok || q < seed002QueueAt4/2 || q > seed002QueueAt4*3/2 {
		t.Errorf("before: %d waiting at 4:00, want the seed's %d within 50 %%", q, seed002QueueAt4)
	}
	for i := range before.Timeline.Minutes {
		m := &before.Timeline.Minutes[i]
		switch {
		case i == 0:
			// The seed's TTFT p99 at 120 req/s, before the ramp.
			if p := m.TTFTQuantile(.99); p < seed002P99BeforeRamp*3/4 || p > seed002P99BeforeRamp*5/4 {
				t.Errorf("before, minute 1: interactive TTFT p99 %s, want the seed's %s within 25 %%", p, seed002P99BeforeRamp)
			}
			fallthrough
		case i < 3:
			// The error panel "stayed flat for the first three minutes".
			if n := m.TimedOut[0] + m.TimedOut[1] + m.TimedOut[2]; n > 0 {
				t.Errorf("before, minute %d: %d attempts timed out, want none (the seed's first three minutes)", i+1, n)
			}
		case i == report.Seed002Minute-1:
			// Timeouts begin in minute 5: its p99 is at the timeout, and
			// the seed's +35 % at 5:00 lies between minute 5's retries
			// (the minute they begin) and minute 6's (held at 260 req/s).
			if p := m.TTFTQuantile(.99); p < 6*time.Second || m.TimedOut[1] == 0 {
				t.Errorf("before, minute 5: interactive TTFT p99 %s, %d timed out; want the seed's 8 s timeout reached",
					p, m.TimedOut[1])
			}
			if len(before.Timeline.Minutes) <= i+1 {
				t.Fatal("before: no minute 6")
			}
			// The seed's +90/s "by minute five": retries reach it, over
			// ten seconds, from 4:45 to 5:20.
			at, ok := retriesReach(series["before"], seed002Retries5, 10)
			if !ok || at < 4*time.Minute+45*time.Second || at > 5*time.Minute+20*time.Second {
				t.Errorf("before: retries reach the seed's +%.0f/s over 10 s at %s (reached: %v); want from 4:45 to 5:20",
					seed002Retries5, at, ok)
			}
			t.Logf("before: retries reach +%.0f/s over the 10 s to %s", seed002Retries5, at)
		}
	}
	// The seed's mean first token "four minutes in", 210 ms, leaves out
	// the time in the node's queue: "a request that's still waiting in
	// line hasn't generated a first token yet, so it isn't in the TTFT
	// distribution at all until it finally gets scheduled". Counted from
	// when the node starts the call, the simulator's is within 15 % of it;
	// counted from the request's first attempt, it is several times more
	// whatever is left out, since a request answered near 4:00 has waited
	// a second or more.
	m4 := &before.Timeline.Minutes[3]
	if n := m4.MeanNodeTTFT(); n < seed002MeanAt4*85/100 || n > seed002MeanAt4*115/100 {
		t.Errorf("before, minute 4: the node's own mean TTFT %s, want the seed's %s within 15 %%", n, seed002MeanAt4)
	}
	if n := meanTTFT(m4); n < 2*seed002MeanAt4 {
		t.Errorf("before, minute 4: mean TTFT from the first attempt %s; with 300 and more waiting it should be well past the seed's %s", n, seed002MeanAt4)
	}
	// The seed's p99 of 6.1 s at 2:00 needs a node of 147 req/s, which
	// would hold thousands waiting at 4:00, not 347 (docs/SIMULATOR.md):
	// one node cannot give both, and this one gives the queue.
	if p := before.Timeline.Minutes[1].TTFTQuantile(.99); p >= seed002P99At2 {
		t.Errorf("before, minute 2: interactive TTFT p99 %s; a node that holds 347 waiting at 4:00 queues nothing at 2:00", p)
	}
	// After: the queue is capped at the seed's 150.
	if both, _, _ := after.Timeline.Peak(len(after.Timeline.Minutes)); both > 150+5 {
		t.Errorf("after: %d waiting at the peak, want the cap of 150 (plus the node's few)", both)
	}
	// After, every minute: interactive untouched and rejections at once
	// (the seed: under 15 ms); at minute 5 the interactive TTFT p99
	// within the seed's 640 ms, and none of it retry waiting: with the
	// clients' retries off it is the same.
	for i := range after.Timeline.Minutes {
		am := &after.Timeline.Minutes[i]
		if am.Shed(0)+am.Shed(1) > 0 {
			t.Errorf("after, minute %d: %d critical and %d interactive shed, want none (the seed: untouched)", i+1, am.Shed(0), am.Shed(1))
		}
		if p := am.Rejection.Quantile(.99); p > seed002AfterReject {
			t.Errorf("after, minute %d: rejection p99 %s, want under the seed's %s", i+1, p, seed002AfterReject)
		}
	}
	// The seed's 640 ms is 220 ms over its own 420 ms before the ramp;
	// here interactive requests hardly wait, so theirs stays near the
	// node's own, 20 to 30 % under the seed's.
	if p := minute(after).TTFTQuantile(.99); p > seed002AfterP99 || p < seed002AfterP99*6/10 {
		t.Errorf("after, minute 5: interactive TTFT p99 %s, want under the seed's %s by at most 40 %%", p, seed002AfterP99)
	}
	// The readings of the seed's fix. As the scenario reads it (places
	// of 5 / 120 / 25), the queue stays far under 150; as one queue of
	// 150 that background is shed from first, it is held near 150 from
	// minute 4, as the seed's was, and interactive is still untouched.
	// Neither reading's clients retry as little as the seed's +12/s.
	one := rows["after-one-queue"]
	for i := 3; i < 6; i++ {
		m := &one.Timeline.Minutes[i]
		if m.PeakQueue < 140 || m.PeakQueue > 155 || m.Shed(0)+m.Shed(1) > 0 {
			t.Errorf("after, one queue of 150, minute %d: peak queue %d, %d interactive shed; want held near 150, none shed",
				i+1, m.PeakQueue, m.Shed(1))
		}
	}
	for _, name := range []string{"after", "after-one-queue", "after-one-retry"} {
		m := minute(rows[name])
		if r := float64(m.Retries-m.RetriesRefused) / 60; r < seed002AfterRetries {
			t.Errorf("%s, minute 5: %.1f retries/s admitted, at or under the seed's %.0f/s, which no reading reached", name, r, seed002AfterRetries)
		}
	}
	if p, q := minute(after).TTFTQuantile(.99), minute(rows["after-no-retries"]).TTFTQuantile(.99); p > q*6/5 {
		t.Errorf("after, minute 5: interactive TTFT p99 %s, %s with retries off: %s of it is retry waiting", p, q, p-q)
	}
	if os.Getenv("SLUICE_WRITE_SEED002") != "" {
		writeSeed002Article(t, seed002ArticleTable(before, after, rows["after-no-retries"], series["before"])+
			seed002Readings(rows["after"], one, rows["after-one-retry"]))
	}
	// Beyond, at minute 5: rejections at once, retries within 3 % of
	// demand (the seed: 4.6 %), interactive first tokens well inside the
	// 8 s timeout.
	m := minute(beyond)
	if p := m.Rejection.Quantile(.99); p > time.Millisecond {
		t.Errorf("beyond, minute 5: rejection p99 %s, want ≤ 1ms", p)
	}
	if m.RetryShare() > 0.03 {
		t.Errorf("beyond, minute 5: retries %.1f%% of demand, want ≤ 3%%", 100*m.RetryShare())
	}
	for i := range beyond.Timeline.Minutes {
		bm := &beyond.Timeline.Minutes[i]
		if p := bm.TTFTQuantile(.99); p == report.Unreached || p > 4*time.Second {
			t.Errorf("beyond, minute %d: interactive TTFT p99 %s", i+1, p)
		}
		// Interactive is shed only once background is: in any minute
		// that refused interactive work, background kept almost nothing.
		bg := f.Scenario.Clients.All()[1].Schedule(1, 1).Integral(time.Duration(i)*time.Minute, time.Duration(i+1)*time.Minute)
		if bm.Shed(1) > 0 && float64(bm.Shed(2)) < 0.9*bg {
			t.Errorf("beyond, minute %d: %d interactive shed while background kept %.0f of its %.0f",
				i+1, bm.Shed(1), bg-float64(bm.Shed(2)), bg)
		}
		if bm.Shed(0) > 0 {
			t.Errorf("beyond, minute %d: %d critical shed", i+1, bm.Shed(0))
		}
	}
}

// retriesReach is when the retries sent over the last window seconds of
// s first average perSecond, at the end of that window.
func retriesReach(s *Series, perSecond float64, window int) (time.Duration, bool) {
	sum := 0
	for i, p := range s.Points {
		sum += p.Retries
		if i >= window {
			sum -= s.Points[i-window].Retries
		}
		if i+1 >= window && float64(sum) >= perSecond*float64(window) {
			return p.At, true
		}
	}
	return 0, false
}

// seed002Readings sets the readings of the seed's fix side by side.
func seed002Readings(rows ...*report.Row) string {
	var b strings.Builder
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "Readings of the seed's fix: the peak queue (gateway and node) in each of minutes 4, 5 and 6, the rest at minute 5. The seed: a queue capped at 150 and held flat once reached, +12 retries/s, interactive p99 640 ms, interactive untouched.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| reading | peak queue, minutes 4 / 5 / 6 | retries sent | retries admitted | interactive TTFT p99 | interactive shed |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|")
	names := []string{"places of 5 / 120 / 25, up to 3 retries (the scenario's after)", "one queue of 150, background shed first, up to 3 retries", "places of 5 / 120 / 25, one retry"}
	for i, r := range rows {
		tl := r.Timeline
		m := &tl.Minutes[report.Seed002Minute-1]
		fmt.Fprintf(&b, "| %s | %d / %d / %d | +%.0f/s | +%.0f/s | %s | %d |\n", names[i],
			tl.Minutes[3].PeakQueue, tl.Minutes[4].PeakQueue, tl.Minutes[5].PeakQueue,
			float64(m.Retries)/60, float64(m.Retries-m.RetriesRefused)/60, ms(m.TTFTQuantile(.99)), m.Shed(1))
	}
	return b.String()
}
