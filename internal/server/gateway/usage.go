package gateway

import "github.com/sluice-gw/sluice/internal/core/price"

// recordUsage adds x, accounted (account), to the usage records.
func (g *Gateway) recordUsage(x *exchange, u price.Usage, priced bool) {}
