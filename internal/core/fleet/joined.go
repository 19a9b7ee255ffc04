package fleet

import "time"

// Joined reports whether a replica whose first heartbeat reached the
// store at first knows the fleet and the fleet knows it, at now (the
// time of a heartbeat that reached the store), given the times of the
// other live replicas' last heartbeats as that heartbeat found them.
//
// The rule: not before an interval has passed since first (replicas
// started together have all written theirs by then, so the first of
// them does not count itself alone and take the whole of every limit);
// then once every other live replica has heartbeated since first (so
// each counts this one), or once the liveness window (3 intervals) has
// passed (those that have not are not live). Until then a replica
// should not serve: it would take a share the others do not leave it.
// Once it has joined it asks the store for its part of the fleet's
// fixed limits (Claim), and it admits nothing under them before the
// store grants one. The gateway reports ready only once it has joined
// and holds a part (fleetstore.Members.Joined, fleetstore.Claims.Ready);
// the simulator's load balancer sends a joining replica nothing until
// then.
func Joined(first, now time.Time, interval time.Duration, others []time.Time) bool {
	switch since := now.Sub(first); {
	case since >= 3*interval:
		return true
	case since < interval:
		return false
	}
	for _, at := range others {
		if at.Before(first) {
			return false // another replica has not heartbeated since this one's first
		}
	}
	return true
}
