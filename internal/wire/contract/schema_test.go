package contract

import (
	"errors"
	"strings"
	"testing"
)

const person = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name","age"],"additionalProperties":false}`

func TestCheck(t *testing.T) {
	s, err := Compile([]byte(person))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check([]byte(`{"name":"Ada","age":36}`)); err != nil {
		t.Errorf("valid document refused: %v", err)
	}
	for doc, want := range map[string]string{
		`{"name":"Ada"}`:                    "at /: missing property 'age'",
		`{"name":"Ada","age":-1}`:           "at /age: minimum",
		`{"name":"Ada","age":1,"x":true}`:   "additional properties 'x'",
		`{"name":7,"age":1}`:                "at /name: got number, want string",
		`{"name":"Ada","age":1`:             "answer is not JSON",
		"Sure! Here is the JSON: {\"a\":1}": "answer is not JSON",
	} {
		err := s.Check([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", doc, err, want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", doc, err)
		}
	}
	if err := s.Check([]byte(`{"name":"Ada","age":1`)); !errors.Is(err, ErrNotJSON) {
		t.Errorf("truncated document: %v does not wrap ErrNotJSON", err)
	}
}

func TestCompileRefusals(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":`:                                  "schema is not JSON",
		`{"type":"nonsense"}`:                       "schema",
		`{"$ref":"https://example.com/s.json"}`:     "remote $ref",
		`{"properties":{"a":{"$ref":"#/$defs/x"}}}`: "schema",
	} {
		if _, err := Compile([]byte(schema)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", schema, err, want)
		}
	}
}
