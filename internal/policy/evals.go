package policy

import (
	"fmt"
	"regexp"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/evals"
	"github.com/sluice-gw/sluice/internal/wire/contract"
)

// EvalSets builds the eval sets of a validated configuration, in its
// models' order; none when no model declares evals.
func EvalSets(cfg *config.Config) ([]*evals.Set, error) {
	var out []*evals.Set
	for i, m := range cfg.Models {
		if m.Evals == nil {
			continue
		}
		e := m.Evals.WithDefaults()
		s := &evals.Set{Model: m.Name, Interval: e.Interval.D(), Timeout: e.Timeout.D(), Threshold: *e.Threshold, Window: max(1, e.Window)}
		for _, t := range m.Targets {
			s.Targets = append(s.Targets, evals.Target{Provider: t.Provider, Upstream: t.Model})
		}
		for k, c := range e.Cases {
			ch, err := EvalCheck(c)
			if err != nil {
				return nil, fmt.Errorf("models[%d].evals.cases[%d]: %w", i, k, err)
			}
			mt := c.MaxTokens
			if mt == 0 {
				mt = e.MaxTokens
			}
			s.Cases = append(s.Cases, evals.Case{Name: c.Name, System: c.System, Prompt: c.Prompt, MaxTokens: mt, Check: ch})
		}
		if s.Interval <= 0 || len(s.Cases) == 0 {
			return nil, fmt.Errorf("models[%d].evals: needs a positive interval and at least one case", i)
		}
		out = append(out, s)
	}
	return out, nil
}

// EvalCheck compiles a case's check. Config validation has already
// refused a case without exactly one check, a regex that does not
// compile and a schema that does not; the error here is for a config
// built in code.
func EvalCheck(c config.EvalCase) (evals.Check, error) {
	switch c.CheckKind() {
	case "exact":
		return evals.Exact(*c.Exact), nil
	case "contains":
		return evals.Contains(c.Contains), nil
	case "regex":
		re, err := regexp.Compile(c.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", c.Regex, err)
		}
		return evals.Regex(re), nil
	case "json_schema":
		s, err := contract.Compile([]byte(c.JSONSchema.JSON))
		if err != nil {
			return nil, err
		}
		return evals.Schema(s.Check), nil
	case "number":
		return evals.Number(*c.Number, c.Tolerance), nil
	}
	return nil, fmt.Errorf("no check: set one of exact, contains, regex, json_schema or number")
}
