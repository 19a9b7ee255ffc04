package mock

import "encoding/json"

// Structured output. A request that asks for a JSON answer, an OpenAI
// response_format of type json_schema or json_object (or the Responses
// API's text.format, read in responses.go), or an Anthropic
// output_config.format, is answered with JSON in place of words: an
// object that fills every property of the schema as a tool call's
// arguments do (argsFor), "{}" for JSON mode. Streamed, it comes a few
// bytes a token; max_tokens may cut it short, as it would a model's.
//
// A request that enables Anthropic's extended thinking gets a short
// thinking block (with its signature) before the text, whole and
// streamed, so a client or gateway sees one to skip or keep.

// structuredRequest holds what a request says about its answer's form,
// in either API.
type structuredRequest struct {
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	OutputConfig *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
	Thinking *struct {
		Type string `json:"type"`
	} `json:"thinking"`
}

// jsonAnswer is the JSON a request's answer must be, "" for any text.
func (q *structuredRequest) jsonAnswer() string {
	if rf := q.ResponseFormat; rf != nil {
		switch rf.Type {
		case "json_object":
			return "{}"
		case "json_schema":
			if rf.JSONSchema == nil {
				return "{}"
			}
			return argsFor(rf.JSONSchema.Schema)
		}
	}
	if oc := q.OutputConfig; oc != nil && oc.Format != nil && oc.Format.Type == "json_schema" {
		return argsFor(oc.Format.Schema)
	}
	return ""
}

// structured reads a request's structured output ask into c; the JSON
// answer replaces a tool result's echo.
func (c *call) structured(body []byte) {
	var q structuredRequest
	if json.Unmarshal(body, &q) != nil {
		return
	}
	if c.json = q.jsonAnswer(); c.json != "" {
		c.echo = ""
	}
	c.thinking = q.Thinking != nil && q.Thinking.Type == "enabled"
}

// jsonTokens cuts a JSON answer into the tokens it streams as: eight
// bytes each, never inside a multi-byte character (argsFor writes ASCII
// for the values it makes; property names may not be).
func jsonTokens(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(8, len(s))
		for n < len(s) && s[n]&0xC0 == 0x80 {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// The thinking block the mock sends when asked to think.
const (
	mockThinking  = "The user asked a question; answer it briefly."
	mockSignature = "mock-signature"
)

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}
