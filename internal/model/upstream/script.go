package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ParseScript parses a YAML behaviour script (format in the package
// doc). Settings it leaves out keep their DefaultConfig values,
// so a script states only what it changes. Unknown keys are errors,
// because a typo in a brownout scenario would otherwise silently produce
// a healthy provider.
func ParseScript(data []byte) (Config, error) {
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		if strings.Contains(err.Error(), "time.Duration") {
			// yaml names only the line; say what a duration looks like.
			err = fmt.Errorf("%w (durations need a unit: 50ms, 2s, 1m)", err)
		}
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// UnmarshalYAML accepts 32, "16-64" or {min: 16, max: 64}.
func (r *TokenRange) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := ParseTokenRange(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: output_tokens: %v", n.Line, err)
		}
		*r = v
		return nil
	}
	type plain TokenRange // drops this method, so Decode does not recurse
	return n.Decode((*plain)(r))
}

// ParseTokenRange reads "N", "MIN-MAX" or "MIN..MAX".
func ParseTokenRange(s string) (TokenRange, error) {
	lo, hi, ok := strings.Cut(s, "..")
	if !ok {
		lo, hi, ok = strings.Cut(s, "-")
	}
	low, err1 := strconv.Atoi(strings.TrimSpace(lo))
	high, err2 := low, error(nil)
	if ok {
		high, err2 = strconv.Atoi(strings.TrimSpace(hi))
	}
	if err1 != nil || err2 != nil || low < 0 || high < low {
		return TokenRange{}, fmt.Errorf("%q: want N or MIN-MAX token counts", s)
	}
	return TokenRange{Min: low, Max: high}, nil
}

// ScenarioUpstream parses scenario.upstreams.NAME from a scenario file's
// bytes, as a script. Unless the upstream sets its own seed, it derives
// one from scenario.seed and the provider's name, the same way for every
// reader, so the simulator's upstream and a real sluice mock draw the
// same behaviour.
func ScenarioUpstream(data []byte, provider string) (Config, error) {
	var doc struct {
		Scenario struct {
			Seed      uint64               `yaml:"seed"`
			Upstreams map[string]yaml.Node `yaml:"upstreams"`
		} `yaml:"scenario"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Config{}, err
	}
	node, ok := doc.Scenario.Upstreams[provider]
	if !ok {
		return Config{}, fmt.Errorf("scenario.upstreams has no provider %q", provider)
	}
	script, err := yaml.Marshal(&node)
	if err != nil {
		return Config{}, err
	}
	cfg, err := ParseScript(script)
	if err != nil {
		return Config{}, fmt.Errorf("scenario.upstreams.%s: %w", provider, err)
	}
	if cfg.Seed == 0 {
		cfg.Seed = doc.Scenario.Seed + uint64(len(provider))*0x9e3779b9
		for _, c := range provider {
			cfg.Seed = cfg.Seed*31 + uint64(c)
		}
	}
	return cfg, nil
}
