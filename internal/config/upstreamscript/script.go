// Package upstreamscript reads the behaviour script of a modelled
// upstream (package upstream's Config) from YAML: a script file for
// sluice mock, or one provider's entry under scenario.upstreams in a
// scenario file. The model itself knows no file format; this is its one
// reader, used by the fake provider and the simulator alike.
package upstreamscript

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/wire/sseenc"
)

// ParseScript parses a YAML behaviour script (format in the package
// doc). Settings it leaves out keep their DefaultConfig values,
// so a script states only what it changes. Unknown keys are errors,
// because a typo in a brownout scenario would otherwise silently produce
// a healthy provider.
func ParseScript(data []byte) (upstream.Config, error) {
	cfg := upstream.DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		if strings.Contains(err.Error(), "time.Duration") {
			// yaml names only the line; say what a duration looks like.
			err = fmt.Errorf("%w (durations need a unit: 50ms, 2s, 1m)", err)
		}
		return upstream.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return upstream.Config{}, err
	}
	if _, err := sseenc.Parse(cfg.Encoding); err != nil {
		return upstream.Config{}, err
	}
	for i, f := range cfg.Failures {
		if _, err := sseenc.Parse(f.Encoding); err != nil {
			return upstream.Config{}, fmt.Errorf("failures[%d]: %w", i, err)
		}
	}
	return cfg, nil
}

// ScenarioUpstream parses scenario.upstreams.NAME from a scenario file's
// bytes, as a script. Unless the upstream sets its own seed, it derives
// one from scenario.seed and the provider's name, the same way for every
// reader, so the simulator's upstream and a real sluice mock draw the
// same behaviour.
func ScenarioUpstream(data []byte, provider string) (upstream.Config, error) {
	var doc struct {
		Scenario struct {
			Seed      uint64               `yaml:"seed"`
			Upstreams map[string]yaml.Node `yaml:"upstreams"`
		} `yaml:"scenario"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return upstream.Config{}, err
	}
	node, ok := doc.Scenario.Upstreams[provider]
	if !ok {
		return upstream.Config{}, fmt.Errorf("scenario.upstreams has no provider %q", provider)
	}
	script, err := yaml.Marshal(&node)
	if err != nil {
		return upstream.Config{}, err
	}
	cfg, err := ParseScript(script)
	if err != nil {
		return upstream.Config{}, fmt.Errorf("scenario.upstreams.%s: %w", provider, err)
	}
	if cfg.Seed == 0 {
		cfg.Seed = doc.Scenario.Seed + uint64(len(provider))*0x9e3779b9
		for _, c := range provider {
			cfg.Seed = cfg.Seed*31 + uint64(c)
		}
	}
	return cfg, nil
}
