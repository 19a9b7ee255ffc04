package policy

import (
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
)

// Stall is the stall deadline's bounds for cfg (server.stream_stall_*),
// the core's defaults where it sets none, scaled like every other
// default by the config's time scale. The gateway's relay and the
// simulator both take it from here.
func Stall(cfg *config.Config) lifecycle.StallConfig {
	c := lifecycle.StallConfig{Floor: cfg.Server.StreamStallFloor.D(), Ceiling: cfg.Server.StreamStallTimeout.D()}
	if f := cfg.TimeFactor(); f > 0 && f != 1 {
		if c.Floor <= 0 {
			c.Floor = time.Duration(float64(lifecycle.DefaultStallFloor) * f)
		}
		if c.Ceiling <= 0 {
			c.Ceiling = time.Duration(float64(lifecycle.DefaultStallCeiling) * f)
		}
	}
	return c.WithDefaults()
}

// ContinueCaps is what target (provider, model) of model mc can do to
// continue a broken stream (config.ContinuationCaps).
func ContinueCaps(cfg *config.Config, mc config.Model, provider, model string) lifecycle.ContinueCaps {
	var pc config.Provider
	for _, p := range cfg.Providers {
		if p.Name == provider {
			pc = p
		}
	}
	tc := config.Target{Provider: provider, Model: model}
	for _, t := range mc.Targets {
		if t.Provider == provider && t.Model == model {
			tc = t
			break
		}
	}
	prefill, prompt := config.ContinuationCaps(pc, tc)
	return lifecycle.ContinueCaps{Prefill: prefill, Prompt: prompt}
}
