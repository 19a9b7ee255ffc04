package policy

import (
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/spend"
)

// SpendLimits are every limit on key k's spend, for package spend: its
// own, then its team's (the team named by its tenant).
func SpendLimits(cfg *config.Config, k *config.Key) []spend.Limit {
	out := spendLimits(k.Spend, "key", k.Name)
	if t, ok := cfg.Team(k.TenantName()); ok {
		out = append(out, spendLimits(t.Spend, "team", t.Name)...)
	}
	return out
}

func spendLimits(s *config.SpendLimits, scope, name string) []spend.Limit {
	if !s.Any() {
		return nil
	}
	var out []spend.Limit
	add := func(w spend.Window, span time.Duration, d *float64) {
		if d != nil && *d > 0 {
			out = append(out, spend.Limit{Scope: scope, Name: name, Window: w, Span: span, Amount: price.FromDollars(*d), Soft: s.Soft})
		}
	}
	add(spend.Daily, 0, s.Daily)
	add(spend.Monthly, 0, s.Monthly)
	if s.Rolling != nil && s.Rolling.Window > 0 {
		add(spend.Rolling, s.Rolling.Window.D(), s.Rolling.Limit)
	}
	return out
}
