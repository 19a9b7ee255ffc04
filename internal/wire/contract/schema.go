// Package validate holds answers to the contract their request asked for:
// a JSON schema, compiled once and checked against a document, with an
// error that says where the document breaks the schema.
//
// Organisation:
//   - Schema (schema.go): one compiled JSON schema and its Check.
//   - Contract (contract.go): what one chat request declared, in either
//     API: OpenAI's response_format (json_schema or json_object) and the
//     input schemas of its tools (OpenAI's function.parameters,
//     Anthropic's input_schema). ForRequest compiles it, within
//     MaxSchemaBytes and MaxTools, sharing compiled schemas between
//     requests that send the same bytes (cache.go); Check judges an
//     Answer.
//   - Answer (answer.go): the parts of an answer a contract judges (each
//     choice's text and tool calls), read from a whole answer
//     (ParseAnswer) or gathered from a stream as it passes (Collector,
//     bounded by MaxAnswerBytes), in either API.
//
// The gateway decides what a verdict does (gateway/validation.go); this
// package only gives it.
//
// The compiler is github.com/santhosh-tekuri/jsonschema (drafts 4 to
// 2020-12). Schemas come from requests and config, never from the
// network: a schema that names a remote $ref is refused rather than
// fetched, so a request cannot make the gateway open a connection.
package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// english prints the library's error kinds.
var english = message.NewPrinter(language.English)

// Schema is a compiled JSON schema. It is safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// noRemote refuses every $ref the schema does not itself hold.
type noRemote struct{}

func (noRemote) Load(url string) (any, error) {
	return nil, fmt.Errorf("remote $ref %q is not fetched: inline it in the schema", url)
}

// Compile compiles a JSON schema. The error names what is wrong with it.
func Compile(raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noRemote{})
	const url = "sluice:///schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		var sve *jsonschema.SchemaValidationError
		if errors.As(err, &sve) {
			// Where the schema breaks the JSON Schema rules, not the
			// metaschema's name and the URL Sluice gave it.
			return nil, fmt.Errorf("not a valid JSON schema: %s", oneLine(sve.Err))
		}
		return nil, fmt.Errorf("schema: %s", oneLine(err))
	}
	return &Schema{s: s}, nil
}

// ErrNotJSON is wrapped by Check's error when the document does not parse.
var ErrNotJSON = errors.New("answer is not JSON")

// Check validates a JSON document. A nil error means it holds to the
// schema; otherwise the error says where it does not, in one line.
func (s *Schema) Check(doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	return s.CheckValue(v)
}

// CheckValue validates a document already decoded by
// jsonschema.UnmarshalJSON or encoding/json with UseNumber.
func (s *Schema) CheckValue(v any) error {
	if err := s.s.Validate(v); err != nil {
		return errors.New(oneLine(err))
	}
	return nil
}

// oneLine folds the library's indented, multi-line error into one line
// fit for a header or a log field.
func oneLine(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		// The leaves say what broke; the root only repeats the URL.
		var parts []string
		var walk func(e *jsonschema.ValidationError)
		walk = func(e *jsonschema.ValidationError) {
			if len(e.Causes) == 0 {
				loc := "/" + strings.Join(e.InstanceLocation, "/")
				parts = append(parts, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(english)))
				return
			}
			for _, c := range e.Causes {
				walk(c)
			}
		}
		walk(ve)
		if len(parts) > 3 {
			parts = append(parts[:3], fmt.Sprintf("and %d more", len(parts)-3))
		}
		return strings.Join(parts, "; ")
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// CompileValue is a convenience for callers holding a decoded value: it
// re-encodes v and compiles it.
func CompileValue(v any) (*Schema, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Compile(raw)
}
