package config

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The shipped table parses, is dated, and prices the families it
// promises, each with a cached price no dearer than input.
func TestShippedPrices(t *testing.T) {
	tab := ShippedPrices()
	if _, err := time.Parse(time.DateOnly, tab.Compiled); err != nil {
		t.Errorf("compiled: %q is not a date (YYYY-MM-DD)", tab.Compiled)
	}
	for _, m := range []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o3", "o4-mini",
		"claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-3-7-sonnet-latest", "claude-3-5-haiku-latest"} {
		p, ok := tab.Models[m]
		if !ok {
			t.Errorf("%s: not in the shipped table", m)
			continue
		}
		if p.Input <= 0 || p.Output <= 0 || p.CachedInput < 0 || p.CachedInput > p.Input {
			t.Errorf("%s: %+v", m, p)
		}
	}
	v := &checker{}
	validatePrices(v, tab.Models)
	if len(v.errs) > 0 {
		t.Errorf("the shipped table does not validate: %v", v.errs[0])
	}
}

// A config's price replaces the shipped one for its model, whole; the
// other shipped models stay.
func TestEffectivePrices(t *testing.T) {
	c := &Config{Prices: map[string]Price{"gpt-4o": {Input: 1, Output: 2}, "my-llama": {Input: 0.1, Output: 0.2}}}
	rows := c.EffectivePrices()
	by := map[string]PriceRow{}
	for i, r := range rows {
		by[r.Model] = r
		if i > 0 && rows[i-1].Model >= r.Model {
			t.Fatalf("rows not sorted at %s", r.Model)
		}
	}
	if r := by["gpt-4o"]; r.Source != PriceConfig || r.Price != (Price{Input: 1, Output: 2}) {
		t.Errorf("gpt-4o: %+v, want the config's price, cached_input not inherited", r)
	}
	if r := by["my-llama"]; r.Source != PriceConfig {
		t.Errorf("my-llama: %+v", r)
	}
	if r := by["gpt-4o-mini"]; r.Source != PriceShipped || r.Price != ShippedPrices().Models["gpt-4o-mini"] {
		t.Errorf("gpt-4o-mini: %+v", r)
	}
	if len(rows) != len(ShippedPrices().Models)+1 {
		t.Errorf("%d rows, want the shipped %d plus my-llama", len(rows), len(ShippedPrices().Models))
	}
}

func TestPricesValidated(t *testing.T) {
	base := "providers: [{name: p, kind: openai, base_url: 'http://127.0.0.1:1/v1'}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n"
	for _, c := range []struct{ yaml, want string }{
		{"prices: {x: {input: 2, cached_input: 1, output: 8}}\n", ""},
		{"prices: {x: {input: -1, output: 8}}\n", "prices.x: prices must not be negative"},
		{"prices: {x: {input: 1, cached_input: 2, output: 8}}\n", "prices.x.cached_input: 2 is more than input"},
		{"prices: {x: {input: 1, cache_input: 0.5}}\n", "cache_input"},
	} {
		_, err := Parse([]byte(base+c.yaml), "t.yaml")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.yaml, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.yaml, err, c.want)
		}
	}
}

func TestUsageRetention(t *testing.T) {
	base := "providers: [{name: p, kind: openai, base_url: 'http://127.0.0.1:1/v1'}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n"
	c, err := Parse([]byte(base), "t.yaml")
	if err != nil || c.Usage.Retention != 0 || c.Usage.RetentionDays().D() != 400*24*time.Hour {
		t.Fatalf("default retention: %v %v", c.Usage.Retention, err)
	}
	if c, err := Parse([]byte(base+"usage: {retention: 30d}\n"), "t.yaml"); err != nil || c.Usage.Retention != 30 {
		t.Errorf("30d: %v %v", c, err)
	}
	// A marshalled config (serve --check --time-scale prints one) parses
	// again, the default included.
	for _, d := range []Days{0, 30} {
		out, _ := yaml.Marshal(Usage{Retention: d})
		c, err := Parse([]byte(base+"usage: {"+strings.TrimSpace(string(out))+"}\n"), "t.yaml")
		if err != nil || c.Usage.Retention != d {
			t.Errorf("%s marshalled as %q: %v", d, out, err)
		}
	}
	for _, bad := range []struct{ v, want string }{
		{"400", "usage.retention"}, {"10h", "whole days with a d"}, {"0d", "keep at least a day"}, {"-3d", "not a number of days"}, {"99999d", "out of range"},
	} {
		_, err := Parse([]byte(base+"usage: {retention: "+bad.v+"}\n"), "t.yaml")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("retention %s: %v, want %q", bad.v, err, bad.want)
		}
	}
}
