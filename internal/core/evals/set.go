package evals

import (
	"fmt"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
)

// Set is one model's compiled eval set.
type Set struct {
	// Model is the client-facing model; Targets its targets in failover
	// order (the engine's target indices).
	Model   string
	Targets []Target
	Cases   []Case
	// Interval is each target's period; Timeout bounds one call.
	Interval, Timeout time.Duration
	// Threshold is the pass rate below which a target is degraded;
	// Window the number of latest runs the rate counts.
	Threshold float64
	Window    int
}

// Target is one {provider, upstream model} of a set's model.
type Target struct {
	Provider string
	Upstream string
}

// Case is one compiled prompt and its check.
type Case struct {
	Name      string
	System    string
	Prompt    string
	MaxTokens int
	Check     Check
}

// Compile builds the eval sets of a validated configuration, in its
// models' order; none when no model declares evals.
func Compile(cfg *config.Config) ([]*Set, error) {
	var out []*Set
	for i, m := range cfg.Models {
		if m.Evals == nil {
			continue
		}
		e := m.Evals.WithDefaults()
		s := &Set{Model: m.Name, Interval: e.Interval.D(), Timeout: e.Timeout.D(), Threshold: *e.Threshold, Window: max(1, e.Window)}
		for _, t := range m.Targets {
			s.Targets = append(s.Targets, Target{Provider: t.Provider, Upstream: t.Model})
		}
		for k, c := range e.Cases {
			ch, err := NewCheck(c)
			if err != nil {
				return nil, fmt.Errorf("models[%d].evals.cases[%d]: %w", i, k, err)
			}
			mt := c.MaxTokens
			if mt == 0 {
				mt = e.MaxTokens
			}
			s.Cases = append(s.Cases, Case{Name: c.Name, System: c.System, Prompt: c.Prompt, MaxTokens: mt, Check: ch})
		}
		if s.Interval <= 0 || len(s.Cases) == 0 {
			return nil, fmt.Errorf("models[%d].evals: needs a positive interval and at least one case", i)
		}
		out = append(out, s)
	}
	return out, nil
}
