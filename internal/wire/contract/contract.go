package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Limits on what a request may ask to have checked. A schema comes from
// the client, so its cost is bounded before it is compiled: the
// compiler's work grows with the schema's size, and a request whose
// schemas are larger than any real tool list is refused rather than
// compiled.
const (
	// MaxSchemaBytes bounds the bytes of one request's response_format
	// and tools together, as sent: compiling them takes time that grows
	// faster than their size (up to about 170 ms at this bound; see
	// compileSlots).
	MaxSchemaBytes = 64 << 10
	// MaxTools bounds the tools one request may declare for checking.
	MaxTools = 128
	// MaxAnswerBytes bounds the text and tool-call arguments of one
	// answer that are held and checked; an answer with more is invalid.
	MaxAnswerBytes = 1 << 20
	// MaxCheckedValues bounds the JSON values (scalars, arrays and
	// objects) of one answer's text, or one tool call's arguments,
	// that are checked against a schema. The schema library holds
	// every value decoded and walks each, about 330 bytes a value
	// whatever its size: a megabyte of one-digit array elements cost
	// 175 MB. Past the bound the document is not judged (IsCostly), as
	// when its check takes too long.
	MaxCheckedValues = 1 << 16
)

// Format is what response_format asks the text of an answer to be.
type Format uint8

const (
	// AnyText: no response_format, or {"type":"text"}.
	AnyText Format = iota
	// JSONObject: {"type":"json_object"}, a JSON object.
	JSONObject
	// JSONSchema: {"type":"json_schema"}, JSON valid against the schema.
	JSONSchema
)

// Contract is what one request asked its answer to hold to: a
// response_format, the input schemas of the tools it declared, or both.
// It is compiled once per request and then checks every answer made for
// it, whichever backend and dialect made it. Safe for concurrent use.
type Contract struct {
	Format Format
	schema *Schema // JSONSchema's; nil: any JSON
	// tools maps each declared tool's name to its input schema (nil:
	// any JSON object).
	tools map[string]*Schema
}

// RequestError is a request's contract that cannot be used: Param names
// where, and Msg what is wrong with it.
type RequestError struct {
	Param, Msg string
}

func (e *RequestError) Error() string { return e.Param + ": " + e.Msg }

func bad(param, format string, args ...any) error {
	return &RequestError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// ForRequest compiles the contract a request in dialect d declares in
// its structured output and tools (both). responseFormat is the
// request's response_format for OpenAI, and its output_config for
// Anthropic (whose format {type: json_schema, schema} is the same ask
// as OpenAI's json_schema; its other keys ask nothing of the answer). A nil Contract and nil
// error: it asked for no structured output. The error is a
// *RequestError, or ctx's error when ctx ended while the request waited
// for a compile slot.
func ForRequest(ctx context.Context, d protocol.Dialect, responseFormat, tools []byte) (*Contract, error) {
	if len(responseFormat) == 0 && len(tools) == 0 {
		return nil, nil
	}
	if n := len(responseFormat) + len(tools); n > MaxSchemaBytes {
		return nil, bad("tools", "the request's schemas are %d bytes; the gateway checks at most %d (validate.MaxSchemaBytes): shorten them", n, MaxSchemaBytes)
	}
	c := &Contract{}
	switch d {
	case protocol.OpenAI:
		if err := c.openAIFormat(ctx, responseFormat); err != nil {
			return nil, err
		}
	case protocol.Anthropic:
		if err := c.anthropicFormat(ctx, responseFormat); err != nil {
			return nil, err
		}
	}
	if err := c.declareTools(ctx, d, tools); err != nil {
		return nil, err
	}
	if c.Format == AnyText && c.tools == nil {
		return nil, nil
	}
	return c, nil
}

func isNull(raw []byte) bool { return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" }

func (c *Contract) openAIFormat(ctx context.Context, raw []byte) error {
	if isNull(raw) {
		return nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return bad("response_format", "must be an object with a type: %v", err)
	}
	switch rf.Type {
	case "text", "":
	case "json_object":
		c.Format = JSONObject
	case "json_schema":
		c.Format = JSONSchema
		if rf.JSONSchema == nil {
			return bad("response_format.json_schema", "is required when type is json_schema; give it a schema")
		}
		if err := c.compileFormat(ctx, rf.JSONSchema.Schema, "response_format.json_schema.schema"); err != nil {
			return err
		}
	default:
		return bad("response_format.type", "%q is not a response format; use text, json_object or json_schema", rf.Type)
	}
	return nil
}

// compileFormat compiles a JSONSchema format's schema; none is any JSON.
func (c *Contract) compileFormat(ctx context.Context, schema json.RawMessage, param string) error {
	if isNull(schema) {
		return nil
	}
	s, err := compileCached(ctx, schema)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return bad(param, "%v", err)
	}
	c.schema = s
	return nil
}

// anthropicFormat reads Anthropic's output_config: format json_schema
// holds the answer's text to its schema, as OpenAI's json_schema does.
func (c *Contract) anthropicFormat(ctx context.Context, raw []byte) error {
	if isNull(raw) {
		return nil
	}
	var oc struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	}
	if err := json.Unmarshal(raw, &oc); err != nil {
		return bad("output_config", "must be an object: %v", err)
	}
	if oc.Format == nil {
		return nil
	}
	if oc.Format.Type != "json_schema" {
		return bad("output_config.format.type", "%q is not an output format; use json_schema", oc.Format.Type)
	}
	if isNull(oc.Format.Schema) {
		return bad("output_config.format.schema", "is required; give it a schema")
	}
	c.Format = JSONSchema
	return c.compileFormat(ctx, oc.Format.Schema, "output_config.format.schema")
}

func (c *Contract) declareTools(ctx context.Context, d protocol.Dialect, raw []byte) error {
	if isNull(raw) {
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return bad("tools", "must be an array of tools: %v", err)
	}
	if len(list) > MaxTools {
		return bad("tools", "%d tools declared; the gateway checks at most %d (validate.MaxTools)", len(list), MaxTools)
	}
	for i, item := range list {
		name, schema, checked, err := toolOf(d, item)
		at := fmt.Sprintf("tools[%d]", i)
		if err != nil {
			return bad(at, "%v", err)
		}
		if !checked {
			continue // a provider's own tool (web search, ...): its calls are not the client's to check
		}
		if name == "" {
			return bad(at, "has no name")
		}
		if c.tools == nil {
			c.tools = make(map[string]*Schema, len(list))
		}
		if _, dup := c.tools[name]; dup {
			return bad(at, "tool %q is declared twice", name)
		}
		var s *Schema
		if !isNull(schema) {
			if s, err = compileCached(ctx, schema); ctx.Err() != nil {
				return ctx.Err()
			} else if err != nil {
				param := at + ".function.parameters"
				if d == protocol.Anthropic {
					param = at + ".input_schema"
				}
				return bad(param, "%v", err)
			}
		}
		c.tools[name] = s
	}
	return nil
}

// toolOf reads one declared tool: its name and input schema. checked
// false: a tool whose calls are not the client's own functions.
func toolOf(d protocol.Dialect, raw []byte) (name string, schema json.RawMessage, checked bool, err error) {
	if d == protocol.Anthropic {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return "", nil, false, fmt.Errorf("must be a tool object: %v", err)
		}
		if t.Type != "" && t.Type != "custom" {
			return "", nil, false, nil
		}
		return t.Name, t.InputSchema, true, nil
	}
	var t struct {
		Type     string `json:"type"`
		Function *struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", nil, false, fmt.Errorf("must be a tool object: %v", err)
	}
	if t.Type != "function" && t.Type != "" || t.Function == nil {
		return "", nil, false, nil
	}
	return t.Function.Name, t.Function.Parameters, true, nil
}

// Answer is what an answer says, as far as a contract cares: per choice
// (OpenAI's n; one for Anthropic), its text and its tool calls.
type Answer struct {
	Choices []Choice
}

// Choice is one choice of an answer.
type Choice struct {
	Text []byte
	// Refusal is OpenAI's message.refusal: the model declined.
	Refusal string
	Calls   []Call
}

// Call is one tool call: the tool it names and its arguments, a JSON
// document (an empty one stands for {}).
type Call struct {
	Name string
	Args []byte
}

// ErrTooLarge: an answer's text and arguments are over MaxAnswerBytes.
var ErrTooLarge = fmt.Errorf("answer's text and tool arguments are over %d bytes, more than the gateway checks", MaxAnswerBytes)

// Check says whether a holds to the contract: nil, or an error that says
// where it does not, in one line, or ErrCostly when checking took too
// long to wait for (budget.go). A choice that made tool calls is judged
// by them (its text is then the model's aside, not the answer); one that
// made none, by its text against response_format.
func (c *Contract) Check(a Answer) error {
	if len(a.Choices) == 0 {
		return errors.New("the answer has no choices")
	}
	for i, ch := range a.Choices {
		if err := c.checkChoice(ch); err != nil {
			if len(a.Choices) > 1 && !IsCostly(err) {
				return fmt.Errorf("choice %d: %w", i, err)
			}
			return err
		}
	}
	return nil
}

func (c *Contract) checkChoice(ch Choice) error {
	if len(ch.Calls) > 0 {
		for _, call := range ch.Calls {
			if err := c.checkCall(call); err != nil {
				return err
			}
		}
		return nil
	}
	if c.Format == AnyText {
		return nil
	}
	if ch.Refusal != "" && len(bytes.TrimSpace(ch.Text)) == 0 {
		return fmt.Errorf("the model refused instead of answering in the requested format: %s", clip(ch.Refusal, 120))
	}
	text := bytes.TrimSpace(ch.Text)
	if len(text) == 0 {
		return errors.New("the answer's text is empty, not JSON")
	}
	if c.Format == JSONObject || c.schema == nil {
		// Nothing to check but the JSON itself: read without building
		// a value, which costs a hundred times a text of many small
		// elements.
		if err := validJSON(text); err != nil {
			return fmt.Errorf("the answer's text is not JSON: %s", clip(err.Error(), 120))
		}
		if c.Format == JSONObject && text[0] != '{' {
			return errors.New("the answer's text is JSON but not an object, as response_format json_object requires")
		}
		return nil
	}
	if err := checkable(text); err != nil {
		return err
	}
	v, err := decode(text)
	if err != nil {
		return fmt.Errorf("the answer's text is not JSON: %s", clip(err.Error(), 120))
	}
	if err := checkContained(c.schema, v); err != nil {
		if IsCostly(err) {
			return err
		}
		return fmt.Errorf("the answer's text breaks response_format's schema: %v", err)
	}
	return nil
}

func (c *Contract) checkCall(call Call) error {
	s, ok := c.tools[call.Name]
	if !ok {
		if c.tools == nil {
			return fmt.Errorf("the answer calls tool %q, but the request declared no tools", clip(call.Name, 64))
		}
		return fmt.Errorf("the answer calls tool %q, which the request did not declare", clip(call.Name, 64))
	}
	args := bytes.TrimSpace(call.Args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if err := validJSON(args); err != nil {
		return fmt.Errorf("tool %q's arguments are not JSON: %s", call.Name, clip(err.Error(), 120))
	}
	if args[0] != '{' {
		return fmt.Errorf("tool %q's arguments are not a JSON object", call.Name)
	}
	if s == nil {
		return nil
	}
	if err := checkable(args); err != nil {
		return err
	}
	v, err := decode(args)
	if err != nil {
		return fmt.Errorf("tool %q's arguments are not JSON: %s", call.Name, clip(err.Error(), 120))
	}
	if err := checkContained(s, v); err != nil {
		if IsCostly(err) {
			return err
		}
		return fmt.Errorf("tool %q's arguments break its schema: %v", call.Name, err)
	}
	return nil
}

// decode reads one JSON document, numbers kept exact, and nothing after it.
func decode(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// tooManyValues is a document not judged because it holds more than
// MaxCheckedValues values; it is ErrCostly to errors.Is.
type tooManyValues struct{}

func (tooManyValues) Error() string {
	return fmt.Sprintf("the answer's JSON holds more than %d values, more than the gateway checks against a schema, so it was not judged", MaxCheckedValues)
}

func (tooManyValues) Unwrap() error { return ErrCostly }

// checkable is nil when doc holds at most MaxCheckedValues JSON values
// (counted by its separators and openings outside strings, an upper
// bound), else tooManyValues: found by a scan that stops at the bound,
// before anything is decoded.
func checkable(doc []byte) error {
	n := 1
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			i = protocol.StringEnd(doc, i)
		case ',', '[', '{':
			if n++; n > MaxCheckedValues {
				return tooManyValues{}
			}
		}
	}
	return nil
}

// validJSON is nil when doc (trimmed) is one JSON document, else
// decode's error for it: checked without building its value.
func validJSON(doc []byte) error {
	if json.Valid(doc) {
		return nil
	}
	if _, err := decode(doc); err != nil {
		return err
	}
	return errors.New("invalid JSON after the value")
}

// clip shortens s to n bytes for a one-line reason.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
