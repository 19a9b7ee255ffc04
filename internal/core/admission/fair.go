package admission

import "time"

// Fairness between tenants (Config.FairTenants). Within a class, a slot
// that frees goes to the tenant with the fewest requests in flight, and
// to that tenant's oldest waiter: a tenant that floods queues behind its
// own requests, and one that sends a request now and then is served as
// if the flood were not there. Classes keep their order, and with one
// tenant this is arrival order, as without fairness.

// pumpFair is Pump with fairness between tenants. Each grant looks at
// every waiter of the class once (the waiting room is bounded by
// MaxDepth, so a grant costs at most that many steps).
func (c *Core) pumpFair(now time.Time) []Ticket {
	var granted []Ticket
	for p := range Priority(numPriorities) {
		for {
			var best *entry
			for e := c.head[p]; e != nil; e = e.next {
				if !c.fits(e.req) {
					if l, ok := limitOf(c.cfg.Global); p != Critical && ok && c.inFlight >= l {
						return granted // nothing non-critical can fit anywhere
					}
					continue
				}
				// Strictly fewer: among equals the oldest, met first, stays.
				if best == nil || c.tenantIn[e.req.Tenant] < c.tenantIn[best.req.Tenant] {
					best = e
				}
			}
			if best == nil {
				break
			}
			c.unlink(best)
			c.start(now, best)
			c.entries.Put(best.ticket, best)
			granted = append(granted, best.ticket)
		}
	}
	return granted
}
