package sim

import (
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// degradeAsk is what the simulator knows of q, a request of a model with
// Degradation d, for lifecycle.Degrade, as the gateway knows it.
func (r *run) degradeAsk(q *request, d *lifecycle.Degradation) lifecycle.DegradeAsk {
	eng, now := q.rep.eng, r.clock(r.now)
	return lifecycle.DegradeAsk{Degrade: d, KeyOptsOut: !q.st.mayDegrade, Shared: r.sharedStatus(q, q.st.key),
		Pressure: func(req lifecycle.Request, d lifecycle.Degradation) bool { return eng.ShouldDegrade(now, req, d) }}
}

// sharedStatus is key k's (from 1) budget as the fleet's store holds it
// now, when the store keeps it, or, while the store is down, as q's
// replica's own share of it holds it (nil otherwise): the budget that
// q's reservation is then taken from (fleet.take), for degrading on a
// nearly spent budget (lifecycle.DegradeAsk.Shared). The gateway reads
// the status its replica's last take or settle brought back, to save a
// round trip; the simulator's store is in memory and is read as it is.
func (r *run) sharedStatus(q *request, k int) *[3]quota.Status {
	f := r.fleet
	if f == nil || !f.shared || k < 1 || k > len(f.keys) || f.keys[k-1] == nil {
		return nil
	}
	b := f.keys[k-1]
	if !f.storeUp(r) {
		b = f.local(r, q.rep, k-1)
	}
	st := b.Status(r.clock(r.now))
	return &st
}
