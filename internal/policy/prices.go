package policy

import (
	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/price"
)

// Price is a config price as package price takes it.
func Price(p config.Price) price.Price {
	return price.Price{Input: p.Input, Output: p.Output, CachedInput: p.CachedInput}
}

// Prices is the table cfg's requests are costed at, by upstream model:
// the shipped table, overridden model by model by cfg's prices:
// (config.Config.EffectivePrices). Every host that costs a request
// (the cost metric, usage records, spend limits) takes its prices from
// here.
func Prices(cfg *config.Config) map[string]price.Price {
	rows := cfg.EffectivePrices()
	out := make(map[string]price.Price, len(rows))
	for _, r := range rows {
		out[r.Model] = Price(r.Price)
	}
	return out
}
