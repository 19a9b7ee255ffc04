package upstream

import (
	"strings"
	"testing"
	"time"
)

func TestSingleRequestFaultsValidate(t *testing.T) {
	good := []Failure{
		{Kind: FailHang, For: 30 * time.Second},
		{Kind: FailStall, AfterTokens: 0, For: 30 * time.Second},
		{Kind: FailStall, AfterTokens: 40},
		{Kind: FailStall, AfterTokens: 40, For: time.Second, Then: ThenReset},
		{Kind: FailStall, AfterTokens: 40, For: time.Second, Then: ThenEOF},
		{Kind: FailMalformed, AfterTokens: 40, Then: ThenResume},
		{Kind: FailEOF, AfterTokens: 40},
		{Kind: FailTruncate, AfterTokens: 40},
		{Kind: FailReset, AfterTokens: 40},
		{Kind: FailNoDone},
		{Kind: FailContextLength, Rate: 0.5},
		{Kind: FailContentFilter},
	}
	for _, f := range good {
		if err := f.Validate(); err != nil {
			t.Errorf("%+v: %v", f, err)
		}
	}
	bad := []struct {
		f    Failure
		want string
	}{
		{Failure{Kind: FailStatus, For: time.Second}, "for: only a hang or a stall"},
		{Failure{Kind: FailTruncate, Then: ThenReset}, "then: only a stall or a malformed"},
		{Failure{Kind: FailStall, AfterTokens: 3, Then: ThenReset}, "never ends; give it a for"},
		{Failure{Kind: FailStall, For: time.Second, Then: "explode"}, `then "explode"`},
		{Failure{Kind: FailNoDone, AfterTokens: 3}, "takes no status or after_tokens"},
		{Failure{Kind: FailContextLength, Status: 413}, "takes no status or after_tokens"},
		{Failure{Kind: FailStall, For: -time.Second}, "must not be negative"},
		{Failure{Kind: "silence"}, "stall, eof, no_done, context_length or content_filter"},
	}
	for _, c := range bad {
		err := c.f.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one saying %q", c.f, err, c.want)
		}
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{ContextWindow: -1}, "context_window -1"},
		{Config{AssistantPrefill: "maybe"}, `prefill "maybe": want allow or refuse`},
		{Config{Words: "dice"}, `words "dice": want seed or prompt`},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one saying %q", c.cfg, err, c.want)
		}
	}
	if err := (Config{ContextWindow: 8192, AssistantPrefill: PrefillRefuse, Words: WordsPrompt}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestSingleRequestFaultsShape(t *testing.T) {
	for _, c := range []struct {
		f      Failure
		early  bool
		status int
		ending string
	}{
		{Failure{Kind: FailHang}, true, 500, ""},
		{Failure{Kind: FailHang, For: time.Second}, false, 500, ""},
		{Failure{Kind: FailContextLength}, true, 400, ""},
		{Failure{Kind: FailContentFilter}, true, 400, ""},
		{Failure{Kind: FailStall}, false, 500, ThenResume},
		{Failure{Kind: FailStall, For: time.Second, Then: ThenTruncate}, false, 500, ThenTruncate},
		{Failure{Kind: FailMalformed}, false, 500, ThenEOF},
		{Failure{Kind: FailMalformed, Then: ThenResume}, false, 500, ThenResume},
		{Failure{Kind: FailEOF, AfterTokens: 3}, false, 500, ""},
		{Failure{Kind: FailNoDone}, false, 500, ""},
	} {
		if c.f.Early() != c.early || c.f.StatusCode() != c.status || c.f.Ending() != c.ending {
			t.Errorf("%+v: early %v status %d ending %q, want %v %d %q",
				c.f, c.f.Early(), c.f.StatusCode(), c.f.Ending(), c.early, c.status, c.ending)
		}
	}
	cfg := Config{ContextWindow: 100}
	if cfg.Overflows(100) || !cfg.Overflows(101) || (Config{}).Overflows(1<<40) {
		t.Error("Overflows: want true only for a prompt over a set window")
	}
	s := Config{Failures: []Failure{{Kind: FailStall, For: 30 * time.Second}}}.Scaled(0.1)
	if s.Failures[0].For != 3*time.Second {
		t.Errorf("Scaled(0.1) made a 30s stall %v", s.Failures[0].For)
	}
}

// A rule of a new kind draws exactly as a status rule does: replacing
// one kind by another changes which failure a call gets, never any
// other decision, nor any later call's.
func TestNewKindsDrawAsAnyRule(t *testing.T) {
	base := busy()
	for _, kind := range []string{FailStall, FailEOF, FailNoDone, FailContextLength, FailContentFilter} {
		cfg := busy()
		cfg.Failures = append([]Failure(nil), cfg.Failures...)
		cfg.Failures[0] = Failure{Kind: kind, Rate: base.Failures[0].Rate}
		a, b := NewPlanner(base), NewPlanner(cfg)
		hits := 0
		for i := range 2000 {
			at := time.Duration(i) * 2 * time.Millisecond
			pa, pb := a.Next(at), b.Next(at)
			if (pa.Fail == nil) != (pb.Fail == nil) || pa.TTFT != pb.TTFT || pa.Tokens != pb.Tokens || pa.IDHi != pb.IDHi {
				t.Fatalf("%s: call %d planned %+v, a status rule's twin %+v", kind, i, pb, pa)
			}
			if pb.Fail != nil && pb.Fail.Kind == kind {
				hits++
			}
		}
		if hits < 300 || hits > 500 { // rate 0.2 of 2000
			t.Errorf("%s hit %d calls of 2000 at rate 0.2", kind, hits)
		}
	}
}
