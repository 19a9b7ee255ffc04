package cli

import (
	"fmt"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// loadConfig reads the gateway configuration at path: the file as
// written, or, with a policy name, the gateway config of that policy of
// the scenario file at path (scenario.File.PolicyConfig), so that a real
// gateway serves what sluice sim runs as that policy's row.
func loadConfig(path, policy string) (*config.Config, error) {
	if policy == "" {
		return config.Load(path)
	}
	c, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if c.Scenario.Node == nil {
		return nil, fmt.Errorf("--policy %s: %s is a gateway config, not a scenario file: it has no scenario: section, so no policies; drop --policy, or give a scenario file", policy, path)
	}
	f, err := scenario.Load(path)
	if err != nil {
		return nil, err
	}
	p, err := f.Policy(policy)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	return f.PolicyConfig(p)
}
