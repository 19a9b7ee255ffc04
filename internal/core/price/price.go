// Package price turns tokens into money. Prices are dollars per million
// tokens, as providers publish them; money is whole micro-dollars (int64),
// in which one token at a price of p dollars per million costs exactly p.
// Every place that charges, reserves or reports money (spend limits,
// usage records, the cost metric) asks Cost, so a request costs the same
// wherever it is counted.
package price

import "math"

// Price is what a model costs, in dollars per million tokens.
type Price struct {
	Input  float64
	Output float64
	// CachedInput is the price of input the provider served from its
	// prompt cache; zero means no discount (the input price).
	CachedInput float64
}

// Usage is what one call used, as its provider reported it (or as Sluice
// counted it where the provider did not). Input excludes CachedInput.
type Usage struct {
	Input, CachedInput, Output int64
}

// Micros is an amount of money in micro-dollars.
type Micros int64

// Dollars is m in dollars.
func (m Micros) Dollars() float64 { return float64(m) / 1e6 }

// FromDollars is d dollars in micro-dollars, rounded to the nearest.
func FromDollars(d float64) Micros { return Micros(math.Round(d * 1e6)) }

// Cost is what u costs at p, rounded to the nearest micro-dollar.
func (p Price) Cost(u Usage) Micros {
	cached := p.CachedInput
	if cached == 0 {
		cached = p.Input
	}
	return Micros(math.Round(float64(u.Input)*p.Input + float64(u.CachedInput)*cached + float64(u.Output)*p.Output))
}
