// Package fleet holds the rules of a fleet of Sluice replicas that share
// one store: what they tell each other, which of them probes a tripped
// provider, and how a key's budget is shared, while the store answers
// and while it does not.
//
// # Goals
//
//   - One home for each rule, so the simulator's fleet (package sim, with
//     an in-memory store) decides as the gateway's (package gateway, over
//     Redis through package fleetstore) does: the hosts only carry these
//     decisions, over a channel or an event queue.
//   - Never let the fleet admit more than a key's budget because the
//     store is slow or gone, and never leave a provider unprobed because
//     it is.
//
// # Non-goals
//
// The budget arithmetic itself is package quota's; the breaker's states
// and verdicts are package breaker's, and adopting a verdict is
// lifecycle.Engine.Adopt. How a message or a lease travels (pub/sub, a
// Lua script, a simulated latency) is the host's.
//
// # Organisation
//
//   - EvidenceEvery and ProbeLease: the fleet's cadences.
//   - Announce and ProbeFailed: which breaker verdicts a replica sends.
//   - Census: the replica count a replica divides by, the largest seen
//     within the liveness window, so shares never add up to more than
//     a limit while the fleet or its store changes; Joined, when a
//     replica that starts knows the fleet and the fleet knows it, so it
//     may claim its part and serve.
//   - Claim, Slots, Need, Grant: a replica's part of the fleet's fixed
//     concurrency limits, granted by the store out of what the others
//     leave (Grant; Claims is such a store in memory), the calls it
//     gives under each limit (Slots), and how much of it a replica's
//     calls in flight still need (Need), so that a replica that joins
//     takes its part out of what the others give back, and the limits
//     hold while the fleet changes.
//   - Lease and MayProbe: one replica probes a provider at a time; a
//     lease call that fails while the store is up does not probe.
//   - Share, Spent, ShareVerdict, Fits: a replica's part of a key's budget
//     while the store is down, built on quota.Limits.Divide; Settlement,
//     signed units (what a share owes, credit given back) as a
//     quota.Budget settles them.
//   - Credit: the units of a key's budget a replica takes from the store
//     ahead of time and hands out without asking it (how much, when,
//     what a settlement does to it, when it goes back). The host carries
//     its refills and flushes to the store and feeds the answers back.
//
// Everything here is pure: it takes now, reads no clock, starts no
// goroutines, takes no locks and does no I/O.
//
// # Semantics
//
// Where the hosts' former copies disagreed, this is what holds now:
//
//   - A replica's share of a key's budget while the store is down divides
//     the limits by the replicas it last knew alive (the gateway's
//     fleetstore.Members.Live, as of the last heartbeat that reached the
//     store; the simulator's likewise, each replica's Census over the
//     heartbeats its in-memory store counts), not by
//     a configured fleet size. A configured size is something only the
//     simulator knows: a replica's config does not name its fleet's size,
//     and a fleet grows and shrinks under autoscaling. (The simulator
//     used to divide by its configured replica count.)
//
//   - A share starts from the replica's part of what the fleet had spent
//     when the store last answered, rounded UP: with n replicas each
//     taking ⌈spent/n⌉ and each given ⌊burst/n⌋, the n shares together
//     never hold more than the fleet's budget had left, so an outage never
//     hands the fleet a burst it did not have. Rounding down would give
//     up to n−1 units more than that in every dimension. (The simulator
//     used to round down.) Dividing by the live count is what makes the
//     shares add up to at most the whole; the one way they can add up to
//     more is a replica that starts during the outage and never reached
//     the store (it counts itself alone), or the 1-unit floor when a
//     limit is below n.
//
//   - A cost beyond a replica's share of the burst but within the fleet's
//     is told to come back when the replica asks the store again
//     (ShareVerdict), not refused as too large for ever. (The simulator
//     used to answer it 413.)
//
//   - What the replicas took from their shares, net of refunds, is
//     charged to the fleet's budget when the store answers again, into
//     debt if need be, so an outage lends the fleet nothing it does not
//     pay back; and a reservation is settled where the store's state puts
//     it when it is settled (a refund never takes a budget beyond full).
//     The charge lands at once, after the fleet's budget has refilled
//     through the outage with nobody taking from it, so after an outage
//     under full demand the fleet admits up to the outage's refill less
//     than its budget, never more. (The simulator used neither to charge
//     it nor to settle anywhere but where the reservation was taken, and
//     so showed a fleet admitting a burst more than its budget per
//     outage.)
//
//   - Replicas hold credit on the shared budgets (Credit), in the
//     simulator too. (The simulator used to take every request from the
//     store's budget, exactly; the gateway has always held credit.)
//     A unit is handed out only after the store counted it taken, so over
//     a span that starts with no credit held the fleet admits at most the
//     budget, and over any other span at most the credit held at its
//     start more (each replica's at most 1/CreditShare of the burst);
//     what credit costs is refusals that come sooner while other replicas
//     hold credit (fleetstore's "Allotments" works out the bounds).
//
//   - A replica's share of a fixed concurrency limit is what its claim
//     gives (Claim, Slots), not the limit divided by the replicas it
//     counts; the two agree once the fleet is settled. Both hosts
//     used to divide, and both let a joining replica take its share
//     on top of the calls the others still ran under their larger one
//     (the simulator showed 12 of a limit of 10 at a join, the gateway
//     up to 15).
//
// Where the copies agreed, the rule moved here unchanged: a replica
// announces the verdicts it reached from its own evidence except moves
// to HalfOpen, and no adopted verdict; a failed probe is announced as
// HalfOpen, step −1, ReasonProbeError; a lease is refused only while
// another holder's ttl runs; a replica that cannot ask the store probes.
//
// # What the simulator's store does not model
//
// The simulator carries these rules over a store in memory whose only
// imperfections are a one-way latency and scripted outages, so it
// leaves out: a refill's way back (the credit is there when the store
// takes it); a reply lost after the store took a chunk (a refill is
// lost only when the store is down as it arrives); a replica's health
// check (its replicas share again the moment an outage ends, and pay
// what their shares owe then, where the gateway's wait for their next
// check, up to fleetstore's HealthInterval); a heartbeat's round trip
// (it counts as it is sent; the heartbeats themselves, the Census's
// hold and Joined are the gateway's), and a claim's (it is asked with
// a heartbeat and answered at once; the gateway asks beside it, and
// loses no answer in the simulator's store); the
// aging of the store's last status between answers; and the time scale
// the gateway applies to EvidenceEvery and ProbeLease.
package fleet
