package evals

import (
	"errors"
	"strings"
	"testing"
)

// A reason quotes only the start of a long answer.
func TestReasonQuotesAShortPrefix(t *testing.T) {
	r := Contains("needle").Judge(strings.Repeat("hay ", 1000))
	if len(r) > 200 || !strings.Contains(r, "…") {
		t.Errorf("reason %d bytes: %q", len(r), r)
	}
}

// A schema check hands its validator the JSON out of a Markdown fence,
// and quotes the answer before the validator's reason. (The checks as a
// config declares them are tested with policy.EvalCheck.)
func TestSchemaUnfencesAndQuotes(t *testing.T) {
	var got string
	ch := Schema(func(doc []byte) error {
		got = string(doc)
		if got != `{"name":"x"}` {
			return errors.New("missing properties: 'name'")
		}
		return nil
	})
	if r := ch.Judge("```json\n{\"name\":\"x\"}\n```"); r != "" || got != `{"name":"x"}` {
		t.Errorf("fenced JSON: reason %q, validator saw %q", r, got)
	}
	if r := ch.Judge(`{"nom":"x"}`); r != `answer "{\"nom\":\"x\"}": missing properties: 'name'` {
		t.Errorf("reason %q", r)
	}
	if k := ch.Kind(); k != "json_schema" {
		t.Errorf("Kind %q", k)
	}
}
