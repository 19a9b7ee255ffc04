package policy

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/price"
)

// Prices is the shipped table under the config's, with cached_input
// carried through.
func TestPrices(t *testing.T) {
	cfg := &config.Config{Prices: map[string]config.Price{"gpt-4o": {Input: 1, CachedInput: 0.25, Output: 4}}}
	p := Prices(cfg)
	if got := p["gpt-4o"]; got != (price.Price{Input: 1, CachedInput: 0.25, Output: 4}) {
		t.Errorf("gpt-4o: %+v, want the config's", got)
	}
	s := config.ShippedPrices().Models["claude-sonnet-4-5"]
	if got := p["claude-sonnet-4-5"]; got != (price.Price{Input: s.Input, CachedInput: s.CachedInput, Output: s.Output}) {
		t.Errorf("claude-sonnet-4-5: %+v, want the shipped %+v", got, s)
	}
}
