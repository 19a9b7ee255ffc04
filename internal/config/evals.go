package config

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/internal/wire/contract"
)

// Evals is a model's eval set: a few prompts, each with a check, that
// the gateway sends to every one of the model's targets on a schedule,
// as its own synthetic traffic (never a client's key or budget), so a
// fallback that answers wrongly is known before an incident sends users
// to it. A target whose pass rate falls below Threshold is degraded:
// failover passes over it while a target that is not remains.
type Evals struct {
	// Interval is how often each target runs the set (default 5m). Each
	// target's runs are jittered by ±10 %, and its first run comes at a
	// random point of the first tenth of an interval, so targets and
	// replicas do not run in step.
	Interval Duration `yaml:"interval"`
	// Threshold is the pass rate below which a target is degraded
	// (default 0.8): with the default window, one wrong answer in a
	// five-case set tolerated, two not.
	Threshold *float64 `yaml:"threshold"`
	// Window is how many of a target's latest runs its pass rate counts
	// (default 2). Calls that got no answer (an error, a timeout) say
	// nothing about correctness and are not counted; a target is judged
	// once it has a run's worth of answers.
	Window int `yaml:"window"`
	// Timeout bounds one eval call (default 30s).
	Timeout Duration `yaml:"timeout"`
	// MaxTokens is each eval call's max_tokens, unless its case sets one
	// (default 256).
	MaxTokens int `yaml:"max_tokens"`
	// Cases are the prompts and their checks; at least one, at most
	// MaxEvalCases.
	Cases []EvalCase `yaml:"cases"`
}

// EvalCase is one prompt and the check its answer must pass. Exactly one
// of Exact, Contains, Regex, JSONSchema or Number is set.
type EvalCase struct {
	// Name names the case in metrics, logs and /admin/evals (default
	// case1, case2, ...).
	Name string `yaml:"name"`
	// System, when set, is the system prompt.
	System string `yaml:"system"`
	// Prompt is the user message.
	Prompt string `yaml:"prompt"`
	// MaxTokens overrides the set's max_tokens for this case.
	MaxTokens int `yaml:"max_tokens"`
	// Exact: the answer, trimmed of surrounding white space, is this.
	Exact *string `yaml:"exact"`
	// Contains: the answer holds this text.
	Contains string `yaml:"contains"`
	// Regex: the answer matches this regular expression (Go syntax,
	// unanchored; anchor it with ^…$ to match the whole answer).
	Regex string `yaml:"regex"`
	// JSONSchema: the answer is JSON (a ```json fence around it is
	// allowed) valid against this schema, written as YAML or as a JSON
	// string.
	JSONSchema *Schema `yaml:"json_schema"`
	// Number: the answer's first number is within Tolerance of this.
	Number *float64 `yaml:"number"`
	// Tolerance is how far from Number an answer may be (default 0).
	Tolerance float64 `yaml:"tolerance"`
}

// Schema is a JSON schema in a config file: a YAML mapping, or a string
// holding JSON. JSON holds it as JSON.
type Schema struct {
	JSON string
}

// UnmarshalYAML reads a schema written as a mapping or as a JSON string.
func (s *Schema) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		s.JSON = n.Value
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot be written as JSON (%v); use string keys, or write the schema as a JSON string", err)
	}
	s.JSON = string(b)
	return nil
}

// MarshalYAML writes the schema back as its JSON string.
func (s Schema) MarshalYAML() (any, error) { return s.JSON, nil }

// Eval defaults and bounds.
const (
	DefaultEvalInterval   = 5 * time.Minute
	DefaultEvalThreshold  = 0.8
	DefaultEvalWindow     = 2
	DefaultEvalTimeout    = 30 * time.Second
	DefaultEvalMaxTokens  = 256
	MaxEvalCases          = 20
	DefaultEvalInFlight   = 2
	DefaultEvalCallsPerMn = 60
	minEvalInterval       = time.Second
)

// EvalBudget bounds every model's eval calls together: they are the
// gateway's own traffic, and cost the providers' accounts something.
type EvalBudget struct {
	// MaxInFlight is how many eval calls run at once, across every
	// model and target (default 2).
	MaxInFlight int `yaml:"max_in_flight"`
	// MaxCallsPerMinute caps the eval calls started per minute, across
	// every model and target (default 60); a run that would pass it
	// waits its turn. The declared sets must fit in it: Validate refuses
	// sets whose cases × targets per interval add up to more.
	MaxCallsPerMinute int `yaml:"max_calls_per_minute"`
}

// WithDefaults returns e with its zero fields at their defaults.
func (e Evals) WithDefaults() Evals {
	if e.Interval == 0 {
		e.Interval = Duration(DefaultEvalInterval)
	}
	if e.Threshold == nil {
		t := DefaultEvalThreshold
		e.Threshold = &t
	}
	if e.Window == 0 {
		e.Window = DefaultEvalWindow
	}
	if e.Timeout == 0 {
		e.Timeout = Duration(DefaultEvalTimeout)
	}
	if e.MaxTokens == 0 {
		e.MaxTokens = DefaultEvalMaxTokens
	}
	e.Cases = append([]EvalCase(nil), e.Cases...)
	for i := range e.Cases {
		if e.Cases[i].Name == "" {
			e.Cases[i].Name = fmt.Sprintf("case%d", i+1)
		}
	}
	return e
}

// WithDefaults returns b with its zero fields at their defaults.
func (b EvalBudget) WithDefaults() EvalBudget {
	if b.MaxInFlight == 0 {
		b.MaxInFlight = DefaultEvalInFlight
	}
	if b.MaxCallsPerMinute == 0 {
		b.MaxCallsPerMinute = DefaultEvalCallsPerMn
	}
	return b
}

// HasEvals reports whether any model declares an eval set.
func (c *Config) HasEvals() bool {
	for _, m := range c.Models {
		if m.Evals != nil {
			return true
		}
	}
	return false
}

// CheckKind names the check a case sets, or "" if none.
func (k EvalCase) CheckKind() string {
	switch {
	case k.Exact != nil:
		return "exact"
	case k.Contains != "":
		return "contains"
	case k.Regex != "":
		return "regex"
	case k.JSONSchema != nil:
		return "json_schema"
	case k.Number != nil:
		return "number"
	}
	return ""
}

func (c *Config) validateEvals(v *checker) {
	b := c.Evals
	if b.MaxInFlight < 0 {
		v.add("evals.max_in_flight", "%d must be positive; write e.g. %d, or leave it out", b.MaxInFlight, DefaultEvalInFlight)
	}
	if b.MaxCallsPerMinute < 0 {
		v.add("evals.max_calls_per_minute", "%d must be positive; write e.g. %d, or leave it out", b.MaxCallsPerMinute, DefaultEvalCallsPerMn)
	}
	perMinute := 0.0
	for i, m := range c.Models {
		if m.Evals == nil {
			continue
		}
		at := func(f string) string { return fmt.Sprintf("models[%d].evals.%s", i, f) }
		e := m.Evals.WithDefaults()
		if e.Interval < Duration(minEvalInterval) {
			v.add(at("interval"), "%s is too short; write at least 1s, e.g. 5m", time.Duration(e.Interval))
		}
		if t := *e.Threshold; math.IsNaN(t) || t < 0 || t > 1 {
			v.add(at("threshold"), "%v is not a pass rate; write a number from 0 to 1, e.g. %v", t, DefaultEvalThreshold)
		}
		if e.Window < 0 {
			v.add(at("window"), "%d must be positive: the number of latest runs the pass rate counts, e.g. %d", e.Window, DefaultEvalWindow)
		}
		if e.Timeout < 0 {
			v.add(at("timeout"), "must be positive; write e.g. 30s")
		}
		if e.MaxTokens < 0 {
			v.add(at("max_tokens"), "%d must be positive; write e.g. %d", e.MaxTokens, DefaultEvalMaxTokens)
		}
		switch n := len(e.Cases); {
		case n == 0:
			v.add(fmt.Sprintf("models[%d].evals", i), "no cases; add cases: with at least one {prompt: ..., contains: ...}, or remove evals:")
		case n > MaxEvalCases:
			v.add(at("cases"), "%d cases; an eval set is a few prompts, at most %d: keep the ones that tell the targets apart", n, MaxEvalCases)
		}
		names := map[string]int{}
		for k, ec := range e.Cases {
			validateEvalCase(v, fmt.Sprintf("models[%d].evals.cases[%d]", i, k), ec)
			if j, dup := names[ec.Name]; dup {
				v.add(fmt.Sprintf("models[%d].evals.cases[%d].name", i, k), "%s is already the name of cases[%d]; give each case a unique name", short(ec.Name), j)
			} else {
				names[ec.Name] = k
			}
		}
		if e.Interval > 0 {
			perMinute += float64(len(e.Cases)*len(m.Targets)) * float64(time.Minute) / float64(e.Interval)
		}
	}
	if lim := b.WithDefaults().MaxCallsPerMinute; lim > 0 && perMinute > float64(lim)+1e-9 {
		v.add("evals.max_calls_per_minute", "the eval sets need %.1f calls a minute (cases × targets per interval, summed over models), more than %d; raise it, lengthen the models' evals.interval, or trim their cases",
			perMinute, lim)
	}
}

func validateEvalCase(v *checker, at string, ec EvalCase) {
	if ec.Prompt == "" {
		v.add(at+".prompt", "missing; write the user message to send, e.g. \"What is 17 * 23? Answer with the number only.\"")
	}
	if ec.MaxTokens < 0 {
		v.add(at+".max_tokens", "%d must be positive, or left out for the set's max_tokens", ec.MaxTokens)
	}
	n := 0
	for _, set := range []bool{ec.Exact != nil, ec.Contains != "", ec.Regex != "", ec.JSONSchema != nil, ec.Number != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		v.add(at, "no check; set one of exact, contains, regex, json_schema or number")
		return
	case n > 1:
		v.add(at, "sets %d checks; set exactly one of exact, contains, regex, json_schema or number (make another case for another check)", n)
		return
	}
	switch {
	case ec.Regex != "":
		if _, err := regexp.Compile(ec.Regex); err != nil {
			v.add(at+".regex", "%s does not compile (%v); write a Go regular expression, e.g. ^\\d+$", short(ec.Regex), err)
		}
	case ec.JSONSchema != nil:
		if _, err := contract.Compile([]byte(ec.JSONSchema.JSON)); err != nil {
			v.add(at+".json_schema", "%v; write a JSON schema, e.g. {type: object, required: [name]}", err)
		}
	case ec.Number != nil:
		if math.IsNaN(*ec.Number) || math.IsInf(*ec.Number, 0) {
			v.add(at+".number", "must be a finite number")
		}
	}
	if ec.Tolerance != 0 && ec.Number == nil {
		v.add(at+".tolerance", "is only read with number:; remove it, or add number:")
	}
	if ec.Tolerance < 0 || math.IsNaN(ec.Tolerance) {
		v.add(at+".tolerance", "must not be negative; write e.g. 0.01")
	}
}
