package lifecycle

import (
	"testing"
	"time"
)

func TestStallDeadlineFor(t *testing.T) {
	on := StallConfig{}.WithDefaults()
	ms := time.Millisecond
	fast := Gaps{N: 8, Mean: 20 * ms}
	cases := []struct {
		name  string
		cfg   StallConfig
		gaps  Gaps
		token bool
		want  time.Duration
		armed bool
	}{
		{"before the first token: not watched", on, fast, false, 0, false},
		{"stall watching off", StallConfig{}, fast, true, 0, false},
		{"after the first token, no gaps yet: the ceiling", on, Gaps{}, true, DefaultStallCeiling, true},
		{"a fast stream: the floor", on, fast, true, DefaultStallFloor, true},
		{"a slow stream: factor times its gap", on, Gaps{N: 8, Mean: 400 * ms}, true, 8 * time.Second, true},
	}
	for _, tc := range cases {
		d, armed := StallDeadlineFor(tc.cfg, tc.gaps, tc.token)
		if d != tc.want || armed != tc.armed {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, d, armed, tc.want, tc.armed)
		}
	}
}

// Every stop, with and without each fact: a continuation is tried only
// for a break another call can mend, of an unfinished text stream whose
// text the host knows exactly; and a complete stream is never mended.
func TestMendNeverAltersAnAnswer(t *testing.T) {
	for s := StopClosed; s <= StopDeadline; s++ {
		for bits := range 16 {
			f := StreamFacts{Text: bits&1 != 0, Tool: bits&2 != 0, Unread: bits&4 != 0, Finished: bits&8 != 0}
			_, mended := Mend(f, s)
			if mended && (f.Finished || !f.Text || f.Tool || f.Unread || Complete(f, s)) {
				t.Errorf("%+v stopped %v: mended", f, s)
			}
			if Complete(f, s) && !f.Finished && s != StopClosed {
				t.Errorf("%+v stopped %v: complete without its finish reason or terminator", f, s)
			}
			if s == StopClosed && !Complete(f, s) {
				t.Errorf("%+v closed after its terminator: not complete", f)
			}
			switch s {
			case StopClient, StopDeadline, StopUntranslatable:
				if mended {
					t.Errorf("%+v stopped %v: mended", f, s)
				}
			}
		}
	}
}

// A stream is watched for stalls from its first token, and no longer
// once a tool call has begun: a provider's own tool may pause between
// its events by design.
func TestWatched(t *testing.T) {
	cases := []struct {
		f     StreamFacts
		token bool
		want  bool
	}{
		{StreamFacts{}, false, false},
		{StreamFacts{}, true, true},
		{StreamFacts{Text: true}, true, true},
		{StreamFacts{Text: true, Tool: true}, true, false},
		{StreamFacts{Finished: true}, true, true},
	}
	for _, c := range cases {
		if got := Watched(c.f, c.token); got != c.want {
			t.Errorf("Watched(%+v, %v) = %v, want %v", c.f, c.token, got, c.want)
		}
	}
}
