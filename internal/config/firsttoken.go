package config

import (
	"fmt"
	"time"
)

// FirstToken configures the first-token deadline (first_token:): a call
// with no first token (or no headers at all) within Factor times its
// target's recent time to first token, clamped to [Floor, Ceiling], gets
// a second call on the request's next target; the first token wins. A
// target with no history yet gets Ceiling, so a single request into a
// silent provider is rescued after Ceiling, not after the provider's
// timeout. An explicit ceiling of 0s turns it off.
type FirstToken struct {
	Ceiling Duration `yaml:"ceiling"`
	Floor   Duration `yaml:"floor"`
	Factor  float64  `yaml:"factor"`
}

// First-token deadline defaults.
//
//   - Ceiling 10s: the longest a request waits on a silent target before
//     the next one starts, and the deadline of a target with no history
//     yet. Chat models' first tokens come in well under 2 s at the big
//     providers, and even a long prompt's prefill rarely passes 5 s; a
//     silence of 10 s is a fault, and rescuing it then still leaves a
//     60 s provider timeout most of its time. A reasoning model that
//     thinks silently for longer sets models[].first_token_ceiling.
//   - Factor 4 and Floor 2s: four times the target's recent TTFT is past
//     its normal spread (a TTFT's p99 is about 2-3 times its mean), and
//     a floor of 2 s keeps a fast target from being raced on a hiccup.
const (
	DefaultFirstTokenCeiling = 10 * Duration(1e9)
	DefaultFirstTokenFloor   = 2 * Duration(1e9)
	DefaultFirstTokenFactor  = 4.0
)

// firstTokenDefaults fills first_token:, and marks the models whose
// first_token_ceiling is an explicit 0s as off.
func (c *Config) firstTokenDefaults(unset func(path string, zero bool) bool) {
	f := &c.FirstToken
	if unset("first_token.ceiling", f.Ceiling == 0) {
		f.Ceiling = DefaultFirstTokenCeiling
	}
	if unset("first_token.floor", f.Floor == 0) {
		f.Floor = DefaultFirstTokenFloor
	}
	if f.Factor == 0 {
		f.Factor = DefaultFirstTokenFactor
	}
	for i := range c.Models {
		m := &c.Models[i]
		if m.FirstTokenCeiling == 0 && !unset(fmt.Sprintf("models[%d].first_token_ceiling", i), true) {
			m.FirstTokenOff = true
		}
	}
}

// validateFirstToken checks first_token: and the models' overrides and
// context fallbacks.
func (c *Config) validateFirstToken(v *checker) {
	f := c.FirstToken
	if f.Ceiling < 0 || f.Floor < 0 || f.Factor < 0 {
		v.add("first_token", "ceiling, floor and factor must not be negative; write e.g. ceiling: 10s, floor: 2s, factor: 4, or ceiling: 0s to turn it off")
	}
	if f.Ceiling > 0 && f.Floor > f.Ceiling {
		v.add("first_token.floor", "%s is above the ceiling %s; write a floor below it", time.Duration(f.Floor), time.Duration(f.Ceiling))
	}
	names := map[string]bool{}
	for _, m := range c.Models {
		names[m.Name] = true
	}
	for i, m := range c.Models {
		at := func(f string) string { return fmt.Sprintf("models[%d].%s", i, f) }
		if m.FirstTokenCeiling < 0 {
			v.add(at("first_token_ceiling"), "must not be negative; write e.g. 60s, or 0s to turn the first-token deadline off for this model")
		}
		if m.ContextWindow < 0 {
			v.add(at("context_window"), "must not be negative; write the model's context window in tokens, e.g. 128000")
		}
		switch fb := m.ContextFallback; {
		case fb == "":
		case fb == m.Name:
			v.add(at("context_fallback"), "names the model itself; name a model with a larger context window")
		case !names[fb]:
			v.add(at("context_fallback"), "%s is not a model in models:; name one of them", short(fb))
		default:
			if c.contextLoop(m.Name) {
				v.add(at("context_fallback"), "the context fallbacks from %s come back to it; end the chain at a model with no context_fallback", short(m.Name))
			}
		}
	}
}

// contextLoop reports whether following context_fallback from model
// name comes back to a model already visited.
func (c *Config) contextLoop(name string) bool {
	next := map[string]string{}
	for _, m := range c.Models {
		next[m.Name] = m.ContextFallback
	}
	seen := map[string]bool{}
	for n := name; n != ""; n = next[n] {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}
