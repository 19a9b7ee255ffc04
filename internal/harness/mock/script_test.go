package mock

import (
	"strings"
	"testing"
	"time"
)

func TestExampleScriptLoads(t *testing.T) {
	cfg, err := LoadScript("testdata/brownout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Seed != 42 || cfg.TTFT != 80*time.Millisecond || cfg.TPOT != 8*time.Millisecond {
		t.Errorf("latency settings %+v", cfg)
	}
	if cfg.Jitter != (Jitter{Kind: "lognormal", P50: 20 * time.Millisecond, P99: 400 * time.Millisecond}) {
		t.Errorf("jitter %+v", cfg.Jitter)
	}
	if cfg.OutputTokens != (TokenRange{Min: 16, Max: 64}) || cfg.MaxRunning != 16 || cfg.MaxWaiting != 64 || cfg.BatchSlowdown != 0.02 {
		t.Errorf("capacity settings %+v", cfg)
	}
	if len(cfg.Brownouts) != 2 || cfg.Brownouts[1] != (Brownout{Start: 2 * time.Minute, End: 3 * time.Minute, Latency: 8 * time.Second, Fraction: 0.5}) {
		t.Errorf("brownouts %+v", cfg.Brownouts)
	}
	if len(cfg.Failures) != 6 || cfg.Failures[0] != (Failure{Kind: FailStatus, Status: 429, RetryAfter: 2 * time.Second, Rate: 0.02}) ||
		cfg.Failures[3].AfterTokens != 5 {
		t.Errorf("failures %+v", cfg.Failures)
	}
}

func TestScriptDefaultsAndForms(t *testing.T) {
	cfg, err := ParseScript([]byte("output_tokens: 12\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TTFT != DefaultConfig().TTFT || cfg.OutputTokens != (TokenRange{Min: 12, Max: 12}) {
		t.Errorf("got %+v", cfg)
	}
	cfg, err = ParseScript([]byte("output_tokens: {min: 3, max: 9}\nttft: 0s\n"))
	if err != nil || cfg.OutputTokens != (TokenRange{Min: 3, Max: 9}) || cfg.TTFT != 0 {
		t.Errorf("got %+v, %v", cfg, err)
	}
	if _, err := ParseScript(nil); err != nil {
		t.Errorf("empty script: %v", err)
	}
}

func TestScriptErrorsNameTheProblem(t *testing.T) {
	for script, want := range map[string]string{
		"tpot: 5\n":                  "line 1",
		"ttfx: 5ms\n":                "ttfx",
		"output_tokens: lots\n":      "output_tokens",
		"jitter: {kind: gaussian}\n": "jitter.kind",
		"brownouts: [{start: 10s, end: 5s, latency: 1s}]": "brownouts[0]",
		"brownouts: [{start: 1s}]":                        "multiplier or latency",
		"failures: [{kind: explode}]":                     "failures[0]",
		"failures: [{kind: status, status: 200}]":         "status 200",
		"failures: [{kind: hang, rate: 2}]":               "rate",
	} {
		_, err := ParseScript([]byte(script))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want mention of %q", script, err, want)
		}
	}
}

func TestParseBrownout(t *testing.T) {
	for in, want := range map[string]Brownout{
		"30s-60s:x10":   {Start: 30 * time.Second, End: time.Minute, Multiplier: 10},
		"1m-:5s@0.5":    {Start: time.Minute, Latency: 5 * time.Second, Fraction: 0.5},
		"0s-1s:x2.5@.1": {End: time.Second, Multiplier: 2.5, Fraction: 0.1},
	} {
		got, err := ParseBrownout(in)
		if err != nil || got != want {
			t.Errorf("%q: got %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"30s:x2", "a-b:x2", "1s-2s:fast", "2s-1s:x2", "1s-2s:x2@3"} {
		if _, err := ParseBrownout(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}
