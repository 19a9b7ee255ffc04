package evals

import "time"

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
