package e2e

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// The soak's primary script (generated, since sluice mock's windows do
// not repeat) is one the fake provider accepts, and repeats the whole
// six-minute cycle of trouble over the span it is asked for: a slow
// minute, then errors, then hangs, resets and truncated streams, with
// the trickle of 429s always on. Runs in the default suite, so the soak
// (which does not) cannot rot behind a script that no longer loads.
func TestSoakPrimaryScriptRepeatsTheCycle(t *testing.T) {
	span := 65 * time.Minute
	cfg, err := mock.ParseScript([]byte(soakPrimaryScript(span)))
	if err != nil {
		t.Fatalf("the soak's primary script does not load: %v\n%s", err, soakPrimaryScript(span))
	}
	cycles := int((span + soakCycle - 1) / soakCycle)
	if len(cfg.Brownouts) != cycles {
		t.Errorf("%d brownouts over %v, want one per %v cycle: %d", len(cfg.Brownouts), span, soakCycle, cycles)
	}
	kinds := map[string]int{}
	always := 0
	for _, f := range cfg.Failures {
		if f.Start == 0 && f.End == 0 {
			always++
			continue
		}
		kinds[f.Kind]++
		if c := f.Start / soakCycle; f.End > (c+1)*soakCycle {
			t.Errorf("%s window %v-%v spills out of its cycle", f.Kind, f.Start, f.End)
		}
	}
	if always != 1 {
		t.Errorf("%d failure rules always on, want the one trickle of 429s", always)
	}
	for _, k := range []string{"status", "hang", "reset", "truncate"} {
		if kinds[k] != cycles {
			t.Errorf("%d %s windows, want one a cycle: %d", kinds[k], k, cycles)
		}
	}
	last := cfg.Brownouts[len(cfg.Brownouts)-1]
	if last.End > span+soakCycle || last.Start < span-soakCycle {
		t.Errorf("the last brownout is %v-%v; the cycles must reach the end of %v", last.Start, last.End, span)
	}
}
