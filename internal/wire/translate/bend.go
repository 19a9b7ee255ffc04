package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
)

// Structured output and reasoning, which both dialects have in their
// own words: OpenAI's response_format and reasoning_effort, Anthropic's
// output_config.format and thinking.

// anOutputConfig is Anthropic's output_config: format constrains the
// answer's text to JSON valid against a schema (structured outputs,
// generally available on /v1/messages, no beta header).
type anOutputConfig struct {
	Format *anOutputFormat `json:"format,omitempty"`
}

type anOutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// anThinking is Anthropic's extended thinking.
type anThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens,omitempty"`
}

// oaResponseFormat is OpenAI's response_format as this package writes it.
type oaResponseFormat struct {
	Type       string        `json:"type"`
	JSONSchema *oaJSONSchema `json:"json_schema,omitempty"`
}

type oaJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict,omitempty"`
}

// AnswerSchemaName names the schema of an Anthropic output_config.format
// in the response_format it becomes: OpenAI requires a name, Anthropic
// has none.
const AnswerSchemaName = "answer"

// MinThinkingBudget is Anthropic's least budget_tokens for thinking.
const MinThinkingBudget = 1024

// ThinkingBudget is the budget_tokens an OpenAI reasoning_effort asks of
// Anthropic; false for "none" (no thinking) and efforts it does not know. Anthropic's max_tokens
// counts thinking, as OpenAI's max_completion_tokens counts reasoning,
// and a budget must be below it. So when the client set a cap, the
// budget is capped at that cap − 1 (and dropped when that is under
// MinThinkingBudget); when it set none, the default max_tokens is the
// answer's and the budget is added to it.
func ThinkingBudget(effort string) (int64, bool) {
	b, ok := thinkingBudgets[effort]
	return b, ok
}

var thinkingBudgets = map[string]int64{
	"minimal": 1024,
	"low":     2048,
	"medium":  8192,
	"high":    16384,
	"xhigh":   32768,
}

// EffortFor is the reasoning_effort an Anthropic thinking budget becomes:
// under 4096 low, under 16384 medium, else high. ThinkingBudget's low,
// medium and high come back as themselves; minimal comes back low, which
// every OpenAI reasoning model accepts.
func EffortFor(budget int64) string {
	switch {
	case budget < 4096:
		return "low"
	case budget < 16384:
		return "medium"
	}
	return "high"
}

// anyObjectReason is why JSON mode, or a json_schema without a schema,
// is refused toward Anthropic.
const anyObjectReason = "Anthropic's structured outputs hold answers only to a schema of closed objects (additionalProperties: false), so JSON mode's \"any object\" cannot be asked for; send response_format json_schema with a schema instead"

// responseFormatToAnthropic: json_schema's schema, closed
// (closedschema.go), becomes output_config.format; text asks for
// nothing; JSON mode, which asks for any object, cannot be carried.
func (c *conv) responseFormatToAnthropic(o *object, out *anRequest) error {
	raw := o.get("response_format")
	if raw == nil {
		return nil
	}
	rf, err := parseObject(raw, "response_format")
	if err != nil {
		return err
	}
	typ, _, err := getString(rf, "type")
	if err != nil {
		return err
	}
	var schema json.RawMessage
	switch typ {
	case "text":
	case "json_object":
		// Anthropic holds answers only to closed objects: "any object"
		// cannot be asked for.
		return c.refuse("response_format", rf.at("type"), anyObjectReason)
	case "json_schema":
		js := rf.get("json_schema")
		if js == nil {
			return invalid("response_format.json_schema", rf.at("json_schema"), "is required when type is json_schema")
		}
		jo, err := parseObject(js, rf.at("json_schema"))
		if err != nil {
			return err
		}
		// name, description and strict say nothing Anthropic needs:
		// its structured outputs always hold the answer to the schema.
		for _, k := range []string{"name", "description", "strict"} {
			jo.get(k)
		}
		if schema = jo.get("schema"); schema == nil {
			return c.refuse("response_format", jo.at("schema"), anyObjectReason)
		} else if s := bytes.TrimSpace(schema); len(s) == 0 || s[0] != '{' {
			return invalid("response_format.json_schema.schema", jo.at("schema"), "must be a JSON schema object")
		}
		closed, err := closeSchema(schema, jo.at("schema"))
		if te, ok := errors.AsType[*Error](err); ok && te.Kind == ErrUntranslatable {
			return c.refuse("response_format", te.Path, te.Reason)
		}
		if err != nil {
			return err
		}
		schema = closed
		if err := jo.refuseUnused(c, "Anthropic"); err != nil {
			return err
		}
	default:
		if err := c.refuse("response_format", rf.at("type"), "response_format "+quote(typ)+" has no Anthropic equivalent"); err != nil {
			return err
		}
		return nil
	}
	if err := rf.refuseUnused(c, "Anthropic"); err != nil {
		return err
	}
	if schema != nil {
		out.OutputConfig = &anOutputConfig{Format: &anOutputFormat{Type: "json_schema", Schema: schema}}
	}
	return nil
}

// reasoningToAnthropic turns reasoning_effort into a thinking budget
// (ThinkingBudget). It needs everything else translated first: thinking
// cannot go with a temperature other than 1, a top_p under 0.95, or a
// forced tool_choice (Anthropic refuses those together), nor with a
// max_tokens that leaves no room for the least budget. Then the client's
// explicit settings win, and reasoning_effort is dropped (or refused,
// under UnsupportedRefuse), since a budget tunes the answer's quality,
// not its shape.
func (c *conv) reasoningToAnthropic(o *object, out *anRequest) error {
	effort, ok, err := getString(o, "reasoning_effort")
	if err != nil || !ok || effort == "none" {
		return err
	}
	budget, known := ThinkingBudget(effort)
	if c.maxDefaulted {
		budget = min(budget, math.MaxInt64-out.MaxTokens)
	} else {
		budget = min(budget, out.MaxTokens-1)
	}
	why := ""
	switch {
	case !known:
		why = "reasoning_effort " + quote(effort) + " has no thinking budget here; use minimal, low, medium, high or xhigh"
	case budget < MinThinkingBudget:
		why = "Anthropic's least thinking budget is 1024 tokens, and it must be below max_tokens; raise max_tokens above 1024 to keep it"
	case len(out.Temperature) > 0 && !isJSON("1")(out.Temperature):
		why = "Anthropic's thinking cannot be combined with a temperature other than 1"
	case len(out.TopP) > 0 && !topPAllowsThinking(out.TopP):
		why = "Anthropic's thinking cannot be combined with a top_p under 0.95"
	case out.ToolChoice != nil && (out.ToolChoice.Type == "any" || out.ToolChoice.Type == "tool"):
		why = "Anthropic's thinking cannot be combined with a forced tool_choice"
	}
	if why != "" {
		return c.refuse("reasoning_effort", "reasoning_effort", why)
	}
	if c.maxDefaulted {
		out.MaxTokens += budget
	}
	out.Thinking = &anThinking{Type: "enabled", BudgetTokens: budget}
	return nil
}

func topPAllowsThinking(v json.RawMessage) bool {
	var f float64
	return json.Unmarshal(v, &f) == nil && f >= 0.95
}

// outputConfigToOpenAI: output_config.format becomes a json_schema
// response_format named AnswerSchemaName, without strict: OpenAI's strict
// mode wants every property required and additionalProperties false at
// every level, which Anthropic's schemas need not be, and the gateway's
// own contract check holds the answer to the schema either way.
func (c *conv) outputConfigToOpenAI(o *object, out *oaRequest) error {
	raw := o.get("output_config")
	if raw == nil {
		return nil
	}
	oc, err := parseObject(raw, "output_config")
	if err != nil {
		return err
	}
	if f := oc.get("format"); f != nil {
		fo, err := parseObject(f, oc.at("format"))
		if err != nil {
			return err
		}
		typ, _, err := getString(fo, "type")
		if err != nil {
			return err
		}
		if typ != "json_schema" {
			if err := c.refuse("output_config.format", fo.at("type"), "an output format of type "+quote(typ)+" has no OpenAI equivalent"); err != nil {
				return err
			}
		} else {
			schema := fo.get("schema")
			if s := bytes.TrimSpace(schema); len(s) == 0 || s[0] != '{' {
				return invalid("output_config.format.schema", fo.at("schema"), "must be a JSON schema object")
			}
			if err := fo.refuseUnused(c, "OpenAI"); err != nil {
				return err
			}
			out.ResponseFormat = &oaResponseFormat{Type: "json_schema", JSONSchema: &oaJSONSchema{Name: AnswerSchemaName, Schema: schema}}
		}
	}
	return oc.refuseUnused(c, "OpenAI")
}

// thinkingToOpenAI: an enabled thinking budget becomes reasoning_effort
// (EffortFor); disabled asks for nothing. Any other kind of thinking is
// dropped (or refused, under UnsupportedRefuse).
func (c *conv) thinkingToOpenAI(o *object, out *oaRequest) error {
	raw := o.get("thinking")
	if raw == nil {
		return nil
	}
	th, err := parseObject(raw, "thinking")
	if err != nil {
		return err
	}
	typ, _, err := getString(th, "type")
	if err != nil {
		return err
	}
	switch typ {
	case "disabled":
	case "enabled":
		budget, ok, err := getInt(th, "budget_tokens")
		if err != nil {
			return err
		}
		if !ok {
			return invalid("thinking.budget_tokens", th.at("budget_tokens"), "is required when thinking is enabled")
		}
		out.ReasoningEffort = EffortFor(budget)
	default:
		return c.refuse("thinking", th.at("type"), "thinking of type "+quote(typ)+" has no OpenAI equivalent")
	}
	return th.refuseUnused(c, "OpenAI")
}
