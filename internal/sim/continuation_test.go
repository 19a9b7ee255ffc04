package sim

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/sim/report"
)

// Streams that break after their first token are continued on the
// fallback, as the gateway continues them (the core's Engine.Continue):
// none fails. With continuation off everywhere, they fail.
func TestBrokenStreamsContinued(t *testing.T) {
	res := simulate(t, "testdata/midstream.yaml", Options{})
	for _, r := range res.Rows {
		c := r.Counts
		if c[report.Failed] != 0 || c[report.OK] == 0 {
			t.Errorf("%s: %d ok, %d failed; want every broken stream continued", r.Name, c[report.OK], c[report.Failed])
		}
	}
}

func TestBrokenStreamsFailWithoutContinuation(t *testing.T) {
	res := simulate(t, "testdata/midstream-off.yaml", Options{})
	for _, r := range res.Rows {
		if r.Counts[report.Failed] == 0 {
			t.Errorf("%s: no stream failed; the scenario breaks streams that nothing continues", r.Name)
		}
	}
}

// The simulator cuts a stalled stream where the gateway's relay would:
// at the core's stall deadline for the stream's gaps.
func TestStallCutAt(t *testing.T) {
	r := &run{cfg: config.Default("http://127.0.0.1:1")}
	last := 2 * time.Second
	if got, on := r.stallCutAt(last, 20*time.Millisecond, 40); !on || got != last+lifecycle.DefaultStallFloor {
		t.Errorf("a fast stream stalled after 40 tokens is cut at %v (%v), want %v (the floor)", got, on, last+lifecycle.DefaultStallFloor)
	}
	if got, on := r.stallCutAt(last, 20*time.Millisecond, 2); !on || got != last+lifecycle.DefaultStallCeiling {
		t.Errorf("a stream stalled after 2 tokens is cut at %v (%v), want %v (the ceiling)", got, on, last+lifecycle.DefaultStallCeiling)
	}
	if _, on := r.stallCutAt(last, 20*time.Millisecond, 0); on {
		t.Errorf("a stream silent before its first token is cut at the stall deadline; the first-token deadline is its watch")
	}
}

// Streams that go silent for good after their first tokens are cut at
// the core's stall deadline (the floor, for these fast streams) and
// continued on the fallback: none fails, and the slowest answers took
// the deadline and little more.
func TestStalledStreamsCutAndContinued(t *testing.T) {
	res := simulate(t, "testdata/midstream-stall.yaml", Options{})
	for _, r := range res.Rows {
		if c := r.Counts; c[report.Failed] != 0 || c[report.TimedOut] != 0 || c[report.OK] == 0 {
			t.Errorf("%s: %d ok, %d failed, %d timed out; want every stalled stream continued", r.Name, c[report.OK], c[report.Failed], c[report.TimedOut])
		}
		var slowest time.Duration
		for _, ls := range r.Latency {
			for _, l := range ls {
				slowest = max(slowest, l)
			}
		}
		if slowest < lifecycle.DefaultStallFloor || slowest > lifecycle.DefaultStallFloor+2*time.Second {
			t.Errorf("%s: slowest answer %v; want the stall deadline (%v) and a continuation", r.Name, slowest, lifecycle.DefaultStallFloor)
		}
	}
}

// With nothing to continue them, stalled streams are still cut at the
// stall deadline (lifecycle.StallDeadlineFor arms it from the first
// token), and fail there with a clean error: none waits out the 8 s
// deadline to time out.
func TestStalledStreamsFailAtTheStallDeadline(t *testing.T) {
	res := simulate(t, "testdata/midstream-stall-off.yaml", Options{})
	for _, r := range res.Rows {
		if c := r.Counts; c[report.Failed] == 0 || c[report.TimedOut] != 0 {
			t.Errorf("%s: %d failed, %d timed out; want the stalled streams failed at the stall deadline", r.Name, c[report.Failed], c[report.TimedOut])
		}
	}
}
