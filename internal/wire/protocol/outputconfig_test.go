package protocol

import "testing"

func TestStructuredOutput(t *testing.T) {
	raw := []byte(`{"model":"m","output_config":{"format":{"type":"json_schema","schema":{}}},"response_format":{"type":"json_object"}}`)
	for _, fast := range []bool{true, false} {
		var b *Body
		var err error
		if fast {
			var ok bool
			if b, ok = scanBody(raw); !ok {
				t.Fatal("scanBody refused a plain body")
			}
		} else if b, err = decodeBody(raw); err != nil {
			t.Fatal(err)
		}
		if got := string(b.StructuredOutput(Anthropic)); got != `{"format":{"type":"json_schema","schema":{}}}` {
			t.Errorf("fast %v: Anthropic's = %s", fast, got)
		}
		if got := string(b.StructuredOutput(OpenAI)); got != `{"type":"json_object"}` {
			t.Errorf("fast %v: OpenAI's = %s", fast, got)
		}
	}
	b, err := ParseBody([]byte(`{"model":"m"}`))
	if err != nil || b.OutputConfig() != nil {
		t.Errorf("no output_config: %q, %v", b.OutputConfig(), err)
	}
	if _, err := ParseBody([]byte(`{"model":"m","Output_Config":{}}`)); err == nil {
		t.Error("output_config in another case was taken")
	}
}
