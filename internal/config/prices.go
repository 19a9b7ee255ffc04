package config

import (
	_ "embed"
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// shippedPrices is the price table in the binary (prices.yaml).
//
//go:embed prices.yaml
var shippedPrices []byte

// PriceTable is the shipped price table: list prices by upstream model,
// and the date they were compiled.
type PriceTable struct {
	// Compiled is the date (YYYY-MM-DD) the table was written.
	Compiled string           `yaml:"compiled"`
	Models   map[string]Price `yaml:"models"`
}

var shipped = sync.OnceValue(func() PriceTable {
	var t PriceTable
	root, err := parseYAML(shippedPrices, "prices.yaml")
	if err == nil {
		d := &decoder{src: newSource("prices.yaml")}
		d.decode(root, reflect.ValueOf(&t).Elem(), "")
		if len(d.errs) > 0 {
			err = d.errs[0]
		}
	}
	if err != nil {
		panic(fmt.Sprintf("the shipped price table does not parse: %v", err)) // caught by TestShippedPrices
	}
	return t
})

// ShippedPrices is the price table in the binary. The caller must not
// change its map.
func ShippedPrices() PriceTable { return shipped() }

// PriceSource says where an effective price comes from.
const (
	PriceShipped = "shipped"
	PriceConfig  = "config"
)

// PriceRow is one model's effective price and where it comes from.
type PriceRow struct {
	Model  string
	Price  Price
	Source string // PriceShipped or PriceConfig
}

// EffectivePrices is the price table c's requests are costed at: the
// shipped table, with each model c's prices: names replaced (never
// merged field by field: a config price is the whole price). Sorted by
// model name.
func (c *Config) EffectivePrices() []PriceRow {
	t := ShippedPrices()
	rows := make([]PriceRow, 0, len(t.Models)+len(c.Prices))
	for m, p := range t.Models {
		if _, over := c.Prices[m]; !over {
			rows = append(rows, PriceRow{Model: m, Price: p, Source: PriceShipped})
		}
	}
	for m, p := range c.Prices {
		rows = append(rows, PriceRow{Model: m, Price: p, Source: PriceConfig})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Model < rows[j].Model })
	return rows
}

func validatePrices(v *checker, prices map[string]Price) {
	for model, p := range prices {
		if p.Input < 0 || p.Output < 0 || p.CachedInput < 0 {
			v.add("prices."+model, "prices must not be negative; write dollars per million tokens, e.g. {input: 2.5, cached_input: 1.25, output: 10}")
		}
		if p.CachedInput > p.Input && p.Input > 0 {
			v.add("prices."+model+".cached_input", "%v is more than input (%v); cached input is the discounted price of prompt-cache reads: write it at or below input, or leave it out to price cached input as input", p.CachedInput, p.Input)
		}
	}
}
