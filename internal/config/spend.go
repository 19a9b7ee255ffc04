package config

import (
	"fmt"
	"slices"
	"time"
	// The IANA time zones, built in, so spend.time_zone loads on a host
	// or an image without a zoneinfo database.
	_ "time/tzdata"
)

// SpendLimits are what a key (keys[].spend) or a team (teams[].spend)
// may spend, in dollars, priced by prices: (docs/SPEND.md). Each limit
// left out is none; a limit must be above zero.
type SpendLimits struct {
	// Daily is the most spent in a calendar day of spend.time_zone.
	Daily *float64 `yaml:"daily"`
	// Monthly is the most spent in a calendar month of spend.time_zone.
	Monthly *float64 `yaml:"monthly"`
	// Rolling is the most spent in the last Window (kept in 24
	// sub-buckets: a spend counts for at least Window and at most
	// Window/24 longer).
	Rolling *RollingSpend `yaml:"rolling"`
	// Soft is the share of a limit at which answers start carrying
	// X-Sluice-Spend-Warning (default 0.8).
	Soft float64 `yaml:"soft"`
}

// RollingSpend is a limit over a rolling window.
type RollingSpend struct {
	Window Duration `yaml:"window"`
	Limit  *float64 `yaml:"limit"`
}

// Any reports whether any limit is set.
func (s *SpendLimits) Any() bool {
	return s != nil && (s.Daily != nil || s.Monthly != nil || s.Rolling != nil)
}

// Team is a group of keys with a spend limit across them: the keys
// whose tenant: is the team's name (team = tenant).
type Team struct {
	Name  string       `yaml:"name"`
	Spend *SpendLimits `yaml:"spend"`
}

// Spend holds settings every spend limit shares.
type Spend struct {
	// TimeZone is the IANA time zone calendar windows follow: a daily
	// limit resets at its midnight (default UTC).
	TimeZone string `yaml:"time_zone"`
}

// Location is spend.time_zone's location (UTC when unset or unknown;
// validation refuses an unknown one).
func (s Spend) Location() *time.Location {
	if s.TimeZone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Team returns the team named name, if there is one.
func (c *Config) Team(name string) (*Team, bool) {
	for i := range c.Teams {
		if c.Teams[i].Name == name {
			return &c.Teams[i], true
		}
	}
	return nil, false
}

// TeamSpend is the spend limits of key k's team, or nil.
func (c *Config) TeamSpend(k *Key) *SpendLimits {
	if t, ok := c.Team(k.TenantName()); ok {
		return t.Spend
	}
	return nil
}

// HasSpend reports whether key k's spend is limited: by its own limits
// or its team's.
func (c *Config) HasSpend(k *Key) bool { return k.Spend.Any() || c.TeamSpend(k).Any() }

// HasSpendLimits reports whether any key or team has a spend limit. A
// team's holds for keys made at run time in it too, so a team with a
// limit counts even when no key of the file's is in it.
func (c *Config) HasSpendLimits() bool {
	for i := range c.Keys {
		if c.HasSpend(&c.Keys[i]) {
			return true
		}
	}
	for i := range c.Teams {
		if c.Teams[i].Spend.Any() {
			return true
		}
	}
	return false
}

// UpstreamModels are the upstream models a request of the key allowed
// models (nil: every model) can reach: each one's targets, and those of
// the models it degrades to or falls back to for a long context.
func (c *Config) UpstreamModels(models []string) []string {
	if models == nil {
		for _, m := range c.Models {
			models = append(models, m.Name)
		}
	}
	seen := map[string]bool{}
	var out []string
	var walk func(name string)
	walk = func(name string) {
		if seen["m:"+name] {
			return
		}
		seen["m:"+name] = true
		m, ok := c.Model(name)
		if !ok {
			return
		}
		for _, t := range m.Targets {
			if !seen["u:"+t.Model] {
				seen["u:"+t.Model] = true
				out = append(out, t.Model)
			}
		}
		if m.Degrade != nil && m.Degrade.To != "" {
			walk(m.Degrade.To)
		}
		if m.ContextFallback != "" {
			walk(m.ContextFallback)
		}
	}
	for _, m := range models {
		walk(m)
	}
	return out
}

func validateSpendLimits(v *checker, at string, s *SpendLimits) {
	if s == nil {
		return
	}
	positive := func(f string, d *float64) {
		if d != nil && !(*d > 0) {
			v.add(at+"."+f, "%g is not above zero; leave it out for no limit, or disable the key (remove it) to stop its spending", *d)
		}
	}
	positive("daily", s.Daily)
	positive("monthly", s.Monthly)
	if r := s.Rolling; r != nil {
		switch {
		case r.Limit == nil:
			v.add(at+".rolling.limit", "missing; write the dollars the window may spend, e.g. limit: 5")
		default:
			positive("rolling.limit", r.Limit)
		}
		if r.Window.D() < time.Minute {
			v.add(at+".rolling.window", "must be at least 1m; write e.g. 1h or 24h")
		}
	}
	if s.Soft < 0 || s.Soft > 1 {
		v.add(at+".soft", "%g must be a share between 0 and 1, e.g. 0.8 (the default)", s.Soft)
	}
	if !s.Any() {
		v.add(at, "sets no limit; write daily:, monthly: or rolling:, or leave spend: out")
	}
}

func (c *Config) validateSpend(v *checker) {
	if c.Spend.TimeZone != "" {
		if _, err := time.LoadLocation(c.Spend.TimeZone); err != nil {
			v.add("spend.time_zone", "%s is not a known IANA time zone; write e.g. UTC, Europe/Paris or America/New_York", short(c.Spend.TimeZone))
		}
	}
	tenants := map[string]bool{}
	for i := range c.Keys {
		k := &c.Keys[i]
		tenants[k.TenantName()] = true
		validateSpendLimits(v, fmt.Sprintf("keys[%d].spend", i), k.Spend)
	}
	names := map[string]int{}
	for i, t := range c.Teams {
		at := fmt.Sprintf("teams[%d]", i)
		switch j, dup := names[t.Name]; {
		case t.Name == "":
			v.add(at+".name", "missing; a team is the keys whose tenant: is its name")
		case dup:
			v.add(at+".name", "%s is already the name of teams[%d]", short(t.Name), j)
		case !tenants[t.Name]:
			v.add(at+".name", "%s is no key's tenant:, so the team has no keys; set tenant: %s on its keys", short(t.Name), t.Name)
		default:
			names[t.Name] = i
		}
		if t.Spend == nil {
			v.add(at+".spend", "missing; write e.g. spend: {monthly: 500}")
		}
		validateSpendLimits(v, at+".spend", t.Spend)
	}
	if !c.HasSpendLimits() {
		return
	}
	if !c.Durable() {
		v.add("spend", "spend limits must outlive a restart, or a restart would grant a fresh allowance; set store: (a Redis URL, for a fleet) or state.dir: (a directory this gateway alone writes)")
	}
	priced := map[string]bool{}
	for _, r := range c.EffectivePrices() {
		priced[r.Model] = true
	}
	// unpriced are those of models without a price, sorted.
	unpriced := func(models []string) []string {
		var out []string
		for _, m := range models {
			if !priced[m] {
				out = append(out, m)
			}
		}
		slices.Sort(out)
		return out
	}
	// A team's limit holds for the keys made at run time in it too, and
	// such a key may reach every model: each needs a price.
	for i, t := range c.Teams {
		if !t.Spend.Any() {
			continue
		}
		if missing := unpriced(c.UpstreamModels(nil)); len(missing) > 0 {
			v.add(fmt.Sprintf("teams[%d]", i), "has a spend limit, which holds for keys made at run time in the team too, but upstream model %s has no price in the shipped table (sluice prices) or the config; add it to prices: (dollars per million tokens, e.g. prices: {%s: {input: 2.5, output: 10}})",
				orList(missing), missing[0])
		}
	}
	for i := range c.Keys {
		k := &c.Keys[i]
		if !c.HasSpend(k) {
			continue
		}
		if missing := unpriced(c.UpstreamModels(k.Models)); len(missing) > 0 {
			v.add(fmt.Sprintf("keys[%d]", i), "has a spend limit but upstream model %s, which it can reach, has no price in the shipped table (sluice prices) or the config; add it to prices: (dollars per million tokens, e.g. prices: {%s: {input: 2.5, output: 10}})",
				orList(missing), missing[0])
		}
	}
}
