package mock

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/contract"
)

// Every schema construct the vendors' structured outputs support gets a
// value the schema accepts, checked by the same validator Sluice's
// gateway checks answers with: before, arrays, objects and enums came
// out null, and a client asking for tags: string[] failed on the mock.
func TestArgsForMeetsTheSchema(t *testing.T) {
	schemas := map[string]string{
		"flat":          `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0},"ok":{"type":"boolean"},"score":{"type":"number"}},"required":["name","age","ok","score"],"additionalProperties":false}`,
		"array":         `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}},"required":["tags"]}`,
		"array bounds":  `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":3,"maxItems":5,"uniqueItems":true}},"required":["tags"]}`,
		"nested":        `{"type":"object","properties":{"address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string","minLength":5,"maxLength":5}},"required":["city","zip"],"additionalProperties":false}},"required":["address"],"additionalProperties":false}`,
		"enum":          `{"type":"object","properties":{"mood":{"type":"string","enum":["happy","sad"]}},"required":["mood"]}`,
		"const":         `{"type":"object","properties":{"kind":{"const":"person"}},"required":["kind"]}`,
		"anyOf":         `{"type":"object","properties":{"v":{"anyOf":[{"type":"null"},{"type":"integer","minimum":5}]}},"required":["v"]}`,
		"nullable":      `{"type":"object","properties":{"v":{"type":["string","null"]}},"required":["v"]}`,
		"optional":      `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"integer"}}},"required":["a"]}`,
		"formats":       `{"type":"object","properties":{"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"},"e":{"type":"string","format":"email"},"u":{"type":"string","format":"uuid"},"w":{"type":"string","format":"uri"}},"required":["d","t","e","u","w"]}`,
		"bounds":        `{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":10,"maximum":20},"i":{"type":"integer","maximum":-3},"m":{"type":"integer","minimum":7,"multipleOf":5}},"required":["n","i","m"]}`,
		"defs":          `{"type":"object","$defs":{"step":{"type":"object","properties":{"say":{"type":"string"}},"required":["say"]}},"properties":{"steps":{"type":"array","items":{"$ref":"#/$defs/step"}}},"required":["steps"]}`,
		"recursive":     `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}},"required":["name","children"]}`,
		"allOf":         `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}]}`,
		"array of enum": `{"type":"object","properties":{"colors":{"type":"array","items":{"type":"string","enum":["red","green"]}}},"required":["colors"]}`,
	}
	for name, raw := range schemas {
		t.Run(name, func(t *testing.T) {
			s, err := contract.Compile([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			args := argsFor([]byte(raw))
			if err := s.Check([]byte(args)); err != nil {
				t.Fatalf("%s does not meet its schema: %v", args, err)
			}
			if again := argsFor([]byte(raw)); again != args {
				t.Fatalf("the same schema gave %s, then %s", args, again)
			}
		})
	}
}

// The Anthropic SDKs' strict-schema helper moves enum and const into the
// description ("{enum: [...]}"); the mock reads them there, as a model
// does, so a client that validates the answer against its own schema
// (LangChain's ChatAnthropic with Zod) gets a value it accepts.
func TestArgsForReadsChoicesFromTheDescription(t *testing.T) {
	for raw, want := range map[string]string{
		`{"type":"object","properties":{"mood":{"type":"string","description":"{enum: [\"calm\",\"stormy\"]}"}}}`:                    `{"mood":"calm"}`,
		`{"type":"object","properties":{"mood":{"type":"string","description":"How it feels\n\n{enum: [\"calm\"], minLength: 3}"}}}`: `{"mood":"calm"}`,
		`{"type":"object","properties":{"kind":{"type":"string","description":"{pattern: \"x\", const: \"person\"}"}}}`:              `{"kind":"person"}`,
		`{"type":"object","properties":{"n":{"type":"string","description":"say {enum: [1]} or not"}}}`:                              `{"n":"mock"}`,
	} {
		if got := argsFor([]byte(raw)); got != want {
			t.Errorf("%s: got %s, want %s", raw, got, want)
		}
	}
}
