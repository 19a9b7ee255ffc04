package fleet

import "time"

// Lease is a named, expiring ownership, such as the right to probe a
// tripped provider: one holder at a time, and another may take it once
// the holder stops renewing it for a ttl. This is the rule; the gateway
// keeps its leases in Redis (fleetstore.Leases, SET NX PX or PEXPIRE in
// one script), the simulator keeps one Lease per provider in memory.
// The zero Lease is free.
type Lease struct {
	// Holder has the lease until Until; "" nobody.
	Holder string
	Until  time.Time
}

// Acquire takes the lease for holder at now, or renews it if holder has
// it, for ttl, and reports whether holder has it now: it is refused
// only while someone else holds it and its ttl has not run out.
func (l *Lease) Acquire(holder string, now time.Time, ttl time.Duration) bool {
	if l.Holder != "" && l.Holder != holder && now.Before(l.Until) {
		return false
	}
	l.Holder, l.Until = holder, now.Add(ttl)
	return true
}

// MayProbe reports whether a replica probes a provider: it holds the
// provider's probe lease (held, asked without error), or it could not
// ask the store (err is the store's error) while it decides alone (the
// store is down: alone). A replica that cannot reach the store must
// judge alone, so it probes: a fleet whose store is down never leaves a
// provider unprobed, at the cost of every replica probing meanwhile.
// But a lease call that fails while the store is still thought up (a
// timeout on a busy machine, a wrong-typed lease key) is not a licence
// to probe: another replica may hold the lease and be probing, so the
// replica skips this round and asks again at the next.
func MayProbe(held bool, err error, alone bool) bool {
	if err != nil {
		return alone
	}
	return held
}
