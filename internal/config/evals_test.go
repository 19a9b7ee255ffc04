package config

import (
	"strings"
	"testing"
)

const evalsBase = `
providers:
  - {name: primary, kind: openai, base_url: "http://127.0.0.1:8001/v1"}
  - {name: backup, kind: anthropic, base_url: "http://127.0.0.1:8002/v1"}
models:
  - name: chat
    targets: [{provider: primary, model: m1}, {provider: backup, model: m2}]
`

func TestEvalsParse(t *testing.T) {
	c, err := Parse([]byte(evalsBase+`    evals:
      cases:
        - {prompt: "What is 17 * 23?", number: 391}
        - name: capital
          prompt: "Capital of France?"
          contains: Paris
        - prompt: "Name and age as JSON"
          json_schema:
            type: object
            required: [name, age]
            properties: {age: {type: integer}}
        - {prompt: "Say ok", exact: "ok"}
        - {prompt: "Digits", regex: '^\d+$'}
        - {prompt: "pi", number: 3.14, tolerance: 0.01}
        - {prompt: "raw schema", json_schema: '{"type":"array"}'}
`), "evals.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := c.Models[0].Evals.WithDefaults()
	if e.Interval.D() != DefaultEvalInterval || *e.Threshold != DefaultEvalThreshold || e.Window != DefaultEvalWindow ||
		e.Timeout.D() != DefaultEvalTimeout || e.MaxTokens != DefaultEvalMaxTokens {
		t.Errorf("defaults not applied: %+v", e)
	}
	if e.Cases[0].Name != "case1" || e.Cases[1].Name != "capital" {
		t.Errorf("case names %q %q", e.Cases[0].Name, e.Cases[1].Name)
	}
	kinds := []string{}
	for _, k := range e.Cases {
		kinds = append(kinds, k.CheckKind())
	}
	if got := strings.Join(kinds, ","); got != "number,contains,json_schema,exact,regex,number,json_schema" {
		t.Errorf("kinds %s", got)
	}
	if s := e.Cases[2].JSONSchema.JSON; !strings.Contains(s, `"required":["name","age"]`) {
		t.Errorf("schema as JSON: %s", s)
	}
	if b := c.Evals.WithDefaults(); b.MaxInFlight != DefaultEvalInFlight || b.MaxCallsPerMinute != DefaultEvalCallsPerMn {
		t.Errorf("budget defaults %+v", b)
	}
	if !c.HasEvals() {
		t.Error("HasEvals is false")
	}
	if c2, _ := Parse([]byte(evalsBase), "x.yaml"); c2.HasEvals() {
		t.Error("HasEvals without evals")
	}
}

func TestEvalsValidation(t *testing.T) {
	cases := []struct {
		name, evals, want string
	}{
		{"no cases", "    evals: {interval: 1m}\n", "models[0].evals: no cases; add cases:"},
		{"no prompt", "    evals: {cases: [{contains: x}]}\n", "cases[0].prompt: missing"},
		{"no check", "    evals: {cases: [{prompt: hi}]}\n", "cases[0]: no check; set one of exact, contains, regex, json_schema or number"},
		{"two checks", "    evals: {cases: [{prompt: hi, contains: a, regex: b}]}\n", "sets 2 checks; set exactly one"},
		{"bad regex", "    evals: {cases: [{prompt: hi, regex: '(['}]}\n", "cases[0].regex: \"([\" does not compile"},
		{"bad schema", "    evals: {cases: [{prompt: hi, json_schema: {type: 12}}]}\n", "cases[0].json_schema: not a valid JSON schema: at /type"},
		{"schema not JSON", "    evals: {cases: [{prompt: hi, json_schema: '{nope'}]}\n", "schema is not JSON"},
		{"threshold", "    evals: {threshold: 1.5, cases: [{prompt: hi, contains: a}]}\n", "evals.threshold: 1.5 is not a pass rate"},
		{"interval", "    evals: {interval: 10ms, cases: [{prompt: hi, contains: a}]}\n", "evals.interval: 10ms is too short"},
		{"window", "    evals: {window: -1, cases: [{prompt: hi, contains: a}]}\n", "evals.window: -1 must be positive"},
		{"tolerance without number", "    evals: {cases: [{prompt: hi, contains: a, tolerance: 1}]}\n", "tolerance: is only read with number:"},
		{"duplicate names", "    evals: {cases: [{name: a, prompt: hi, contains: a}, {name: a, prompt: hi, contains: b}]}\n", "already the name of cases[0]"},
		{"too many", "    evals:\n      cases:\n" + strings.Repeat("        - {prompt: hi, contains: a}\n", MaxEvalCases+1), "21 cases; an eval set is a few prompts, at most 20"},
		{"over the call budget", "    evals:\n      interval: 1s\n      cases: [{prompt: hi, contains: a}]\n", "evals.max_calls_per_minute: the eval sets need 120.0 calls a minute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(evalsBase+tc.evals), "evals.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant one containing %q", err, tc.want)
			}
		})
	}
	t.Run("a bigger budget lets a short interval through", func(t *testing.T) {
		if _, err := Parse([]byte(evalsBase+"    evals:\n      interval: 1s\n      cases: [{prompt: hi, contains: a}]\nevals: {max_calls_per_minute: 120}\n"), "e.yaml"); err != nil {
			t.Fatal(err)
		}
	})
}
