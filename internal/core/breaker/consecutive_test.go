package breaker

import (
	"testing"
	"time"
)

// A run of errors trips a Closed breaker at any traffic rate: one call
// every 4 s never fills MinCalls in the 12 s window.
func TestConsecutiveErrors(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		seq    []Outcome
		trips  bool
		runEnd int // ErrorRun after seq
	}{
		{"five errors in a row trip by default", Config{}, []Outcome{failed, failed, failed, failed, failed}, true, 0},
		{"four do not", Config{}, []Outcome{failed, failed, failed, failed}, false, 4},
		{"a success ends the run", Config{}, []Outcome{failed, failed, failed, failed, fast, failed, failed, failed, failed}, false, 4},
		{"a slow answer ends it too", Config{SlowThreshold: time.Second}, []Outcome{failed, failed, failed, failed, slowOK, failed}, false, 1},
		{"429s and cancels neither count nor break it", Config{}, []Outcome{failed, failed, limited, gone, failed, failed, limited, failed}, true, 0},
		{"the run length is configurable", Config{ConsecutiveErrors: 3}, []Outcome{failed, failed, failed}, true, 0},
		{"negative turns the rule off", Config{ConsecutiveErrors: -1}, []Outcome{failed, failed, failed, failed, failed, failed, failed}, false, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, tc.cfg)
			now := t0
			for _, o := range tc.seq {
				doCall(t, b, now, o)
				now = now.Add(4 * time.Second)
				if st, _ := b.State(now); st == Open {
					break
				}
			}
			st, _ := b.State(now)
			if (st == Open) != tc.trips {
				t.Fatalf("state %v after %d calls, want tripped=%v", st, len(tc.seq), tc.trips)
			}
			if tc.trips {
				tr := b.Transitions()
				if last := tr[len(tr)-1]; last.Reason != ReasonConsecutiveErrors {
					t.Errorf("tripped by %v, want %v", last.Reason, ReasonConsecutiveErrors)
				}
			}
			if got := b.ErrorRun(); got != tc.runEnd {
				t.Errorf("ErrorRun = %d, want %d", got, tc.runEnd)
			}
		})
	}
}

// While Recovering the run rule stays out: fail-back is judged by its
// own window, as before.
func TestConsecutiveErrorsOnlyWhileClosed(t *testing.T) {
	b, now := halfOpen(t, Config{})
	calls(t, b, now, DefaultProbes, fast)
	if st, _ := b.State(now); st != Recovering {
		t.Fatalf("setup: %v, want recovering", st)
	}
	if b.ErrorRun() != 0 {
		t.Fatalf("ErrorRun %d while recovering", b.ErrorRun())
	}
}
