package price

import "testing"

func TestCost(t *testing.T) {
	p := Price{Input: 2.5, Output: 10, CachedInput: 1.25}
	for _, tc := range []struct {
		u    Usage
		want Micros
	}{
		{Usage{}, 0},
		{Usage{Input: 1_000_000}, 2_500_000},                    // a million input tokens: $2.50
		{Usage{Input: 750, Output: 20}, 750*2.5 + 20*10},        // 1,875 + 200
		{Usage{Input: 100, CachedInput: 1000, Output: 1}, 1510}, // 250 + 1,250 + 10
		{Usage{CachedInput: 1000}, 1250},                        // the cache's discount
	} {
		if got := p.Cost(tc.u); got != tc.want {
			t.Errorf("Cost(%+v) = %d µ$, want %d", tc.u, got, tc.want)
		}
	}
	// No cached price: cached input costs what input does.
	if got := (Price{Input: 3}).Cost(Usage{CachedInput: 10}); got != 30 {
		t.Errorf("cached input without a cached price: %d µ$, want 30", got)
	}
	if got := FromDollars(5.01).Dollars(); got != 5.01 {
		t.Errorf("FromDollars(5.01).Dollars() = %v", got)
	}
}
