package policy

import (
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
)

func str(s string) *string           { return &s }
func num(f float64) *float64         { return &f }
func schema(s string) *config.Schema { return &config.Schema{JSON: s} }

func TestChecks(t *testing.T) {
	cases := []struct {
		name   string
		c      config.EvalCase
		answer string
		fail   string // "" passes; else a substring of the reason
	}{
		{"exact passes, white space aside", config.EvalCase{Exact: str("Paris")}, "  Paris\n", ""},
		{"exact fails on more text", config.EvalCase{Exact: str("Paris")}, "Paris, France", `want exactly "Paris"`},
		{"contains passes", config.EvalCase{Contains: "Paris"}, "The capital is Paris.", ""},
		{"contains fails", config.EvalCase{Contains: "Paris"}, "Lyon", `does not contain "Paris"`},
		{"regex passes", config.EvalCase{Regex: `^\d{3}$`}, "391", ""},
		{"regex fails", config.EvalCase{Regex: `^\d{3}$`}, "three hundred", "does not match"},
		{"schema passes", config.EvalCase{JSONSchema: schema(`{"type":"object","required":["name"]}`)}, `{"name":"x"}`, ""},
		{"schema passes in a fence", config.EvalCase{JSONSchema: schema(`{"type":"object","required":["name"]}`)}, "```json\n{\"name\":\"x\"}\n```", ""},
		{"schema fails a required field", config.EvalCase{JSONSchema: schema(`{"type":"object","required":["name"]}`)}, `{"nom":"x"}`, "name"},
		{"schema fails on prose", config.EvalCase{JSONSchema: schema(`{"type":"object"}`)}, `Sure! Here it is`, "not JSON"},
		{"number passes", config.EvalCase{Number: num(391)}, "The answer is 391.", ""},
		{"number with separators", config.EvalCase{Number: num(1234.5)}, "1,234.5", ""},
		{"number within tolerance", config.EvalCase{Number: num(3.14159), Tolerance: 0.01}, "about 3.14", ""},
		{"number outside tolerance", config.EvalCase{Number: num(3.14159), Tolerance: 0.001}, "3.2", "want 3.14159 ± 0.001, got 3.2"},
		{"number wrong", config.EvalCase{Number: num(391)}, "400", "want 391, got 400"},
		{"no number", config.EvalCase{Number: num(391)}, "no idea", "holds no number"},
		{"negative number", config.EvalCase{Number: num(-2)}, "x = -2", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := EvalCheck(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			got := ch.Judge(tc.answer)
			switch {
			case tc.fail == "" && got != "":
				t.Errorf("%s: failed with %q, want a pass", ch.Kind(), got)
			case tc.fail != "" && !strings.Contains(got, tc.fail):
				t.Errorf("%s: reason %q, want one containing %q", ch.Kind(), got, tc.fail)
			}
		})
	}
}

// A reason quotes only the start of a long answer.
func TestReasonQuotesAShortPrefix(t *testing.T) {
	ch, _ := EvalCheck(config.EvalCase{Contains: "needle"})
	r := ch.Judge(strings.Repeat("hay ", 1000))
	if len(r) > 200 || !strings.Contains(r, "…") {
		t.Errorf("reason %d bytes: %q", len(r), r)
	}
}

func TestEvalCheckRefusesNoCheck(t *testing.T) {
	if _, err := EvalCheck(config.EvalCase{Prompt: "hi"}); err == nil {
		t.Error("a case without a check compiled")
	}
}
