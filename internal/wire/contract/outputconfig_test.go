package contract

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// An Anthropic request's output_config.format holds the answer to its
// schema as OpenAI's json_schema does, whichever API made the answer.
func TestAnthropicOutputConfig(t *testing.T) {
	c, err := ForRequest(context.Background(), protocol.Anthropic,
		[]byte(`{"effort":"low","format":{"type":"json_schema","schema":`+person+`}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil || c.Format != JSONSchema {
		t.Fatalf("contract %+v, want a JSONSchema one", c)
	}
	if err := c.Check(Answer{Choices: []Choice{{Text: []byte(`{"name":"Ada","age":36}`)}}}); err != nil {
		t.Errorf("a valid answer: %v", err)
	}
	if err := c.Check(Answer{Choices: []Choice{{Text: []byte(`{"name":"Ada"}`)}}}); err == nil {
		t.Error("an answer missing a required property passed")
	}
	if err := c.Check(Answer{Choices: []Choice{{Text: []byte(`Ada is 36`)}}}); err == nil {
		t.Error("prose passed a JSON schema")
	}
	for _, none := range []string{``, `null`, `{"effort":"high"}`} {
		if c, err := ForRequest(context.Background(), protocol.Anthropic, []byte(none), nil); c != nil || err != nil {
			t.Errorf("%q: contract %v, error %v; want none", none, c, err)
		}
	}
	for rf, param := range map[string]string{
		`{"format":{"type":"regex"}}`:                                    "output_config.format.type",
		`{"format":{"type":"json_schema"}}`:                              "output_config.format.schema",
		`{"format":{"type":"json_schema","schema":{"type":"nonsense"}}}`: "output_config.format.schema",
		`[1]`: "output_config",
	} {
		_, err := ForRequest(context.Background(), protocol.Anthropic, []byte(rf), nil)
		var re *RequestError
		if !errors.As(err, &re) || re.Param != param {
			t.Errorf("%s: got %v, want a RequestError at %s", rf, err, param)
		}
	}
}
