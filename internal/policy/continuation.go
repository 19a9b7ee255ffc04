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

// continueCaps is what target t, on provider p, can do to continue a
// broken stream: its own continuation setting, else its provider's,
// else the kind's default (config.ContinuationCaps). Each target is
// read as itself, so two targets of one provider and model may differ.
func continueCaps(p config.Provider, t config.Target) lifecycle.ContinueCaps {
	prefill, prompt := config.ContinuationCaps(p, t)
	return lifecycle.ContinueCaps{Prefill: prefill, Prompt: prompt}
}
