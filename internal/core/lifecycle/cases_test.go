package lifecycle_test

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/lifecycle/lifecycletest"
)

// The cases both hosts run (package lifecycletest) hold for the rules
// themselves.
func TestHostCases(t *testing.T) {
	for _, c := range lifecycletest.Classify {
		if p, down := lifecycle.Classify(c.Claim); p != c.Want || down != c.Downgraded {
			t.Errorf("Classify %s: %v, %v; want %v, %v", c.Name, p, down, c.Want, c.Downgraded)
		}
	}
	for _, c := range lifecycletest.Answers {
		if got := lifecycle.Answer(c.Rejection); got != c.Want {
			t.Errorf("Answer %s: %+v, want %+v", c.Name, got, c.Want)
		}
	}
	for _, c := range lifecycletest.Endings {
		if got := c.Ending.Outcome(); got != c.Want {
			t.Errorf("Outcome %s: %+v, want %+v", c.Name, got, c.Want)
		}
	}
	for _, c := range lifecycletest.Mends {
		if got := lifecycle.Complete(c.Facts, c.Stop); got != c.Complete {
			t.Errorf("Complete %s: %v, want %v", c.Name, got, c.Complete)
		}
		if cause, ok := lifecycle.Mend(c.Facts, c.Stop); ok != c.Mended || ok && cause != c.Cause {
			t.Errorf("Mend %s: %v, %v; want %v, %v", c.Name, cause, ok, c.Cause, c.Mended)
		}
	}
}

// A case's two targets, the first continuing nothing, decide as the
// case says.
func TestCapsCasesContinue(t *testing.T) {
	for _, c := range lifecycletest.Caps {
		if got := lifecycletest.ContinueOn([]lifecycle.ContinueCaps{{}, c.Want}); got != c.WantContinue() {
			t.Errorf("%s: %+v, want %+v", c.Name, got, c.WantContinue())
		}
	}
}
