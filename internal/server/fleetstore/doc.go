// Package fleetstore is the state a fleet of Sluice replicas shares through
// Redis, so that the fleet decides as one: per-minute budgets exact
// across replicas (Budgets), the count of live replicas (Members), each
// replica's part of the fixed concurrency limits (Claims), ownership of
// a task such as probing a tripped provider (Leases), and verdicts
// broadcast between replicas (Channels).
//
// # Client
//
// The client is github.com/redis/go-redis/v9: it is maintained by Redis
// itself, runs scripts by EVALSHA and loads them on a cache miss by
// itself (redis.Script), pipelines and MULTI/EXEC in one round trip,
// bounds each call by its context's deadline (with
// ContextTimeoutEnabled, which NewClient sets), pools connections, and
// resubscribes pub/sub connections after they drop. Every type here
// takes a redis.UniversalClient, so a single node, Sentinel or Cluster
// client will do (every operation touches one key).
//
// # Shared budgets
//
// Budgets has package quota's semantics and answers (GCRA in requests,
// input tokens and output tokens; all-or-nothing Take with an exact
// RetryAfter or Never; Check; Charge; Settle and Refund, with debt and
// refunds never beyond full; Status for the rate-limit headers), for a
// budget kept in Redis and shared by every replica. Each operation is
// one Lua script, run by its SHA, in one round trip, and answers with
// the verdict and the status together, so the headers need no second
// trip. A script is atomic, so replicas racing for the last unit cannot
// both get it.
//
// Time is Redis's own clock (TIME inside the script; Redis 7 replicates
// a script's effects, not the script, so that is allowed), so replicas
// whose clocks disagree still agree on every budget. Instants are
// microseconds since 2020-01-01, the resolution of TIME. A backlog
// (TAT − now) is kept as whole microseconds plus a remainder in units of
// 1/PerMinute µs, the way package quota keeps nanoseconds, so every
// multiple of the emission interval is exact and a sustained load gets
// exactly its limit per minute. Lua numbers are doubles; every value the
// scripts compute with is an integer below 2^53 (limits are refused
// above 2^40 a minute or a burst of 2^50, ErrLimits), so all their
// arithmetic is exact. The answers are package quota's at the same
// instants, except that RetryAfter and Reset are rounded up to a whole
// microsecond instead of a nanosecond (so up to 1 µs later, never
// earlier), and debt saturates at 2^52 µs (about 142 years) instead of
// about 146.
//
// A budget is one hash, <prefix>budget:<name>, written only when it
// changes, with a PEXPIRE of its longest backlog plus a second: an idle
// budget vanishes once it would be full again, which is exactly how a
// missing one reads. Every replica must pass the same limits for a
// budget; a budget whose limits change keeps its backlog (rounded up to
// a whole microsecond if its rate changed).
//
// # Allotments
//
// With BudgetOptions.Allot, a replica answers most Takes without a round
// trip. The rules are fleet.Credit's (the simulator's fleet applies
// them too); this package carries them to Redis. Per budget a replica
// holds a credit: units taken from the shared budget
// by the take script ahead of time (a refill), and only then handed out.
// A Take (or Check) that the credit covers in every limited dimension
// is answered from it, in memory. One it does not cover goes to Redis
// as in the default mode, so every refusal, its Dimension, RetryAfter
// and Never, is the script's. Refills run off the request path, one
// round trip per chunk, when the credit falls below the last take's
// cost or half the target. The target, per dimension, is 100 ms of this
// replica's recent takes (a rate decayed with a 200 ms time constant),
// at least the last take's cost; the credit never exceeds 1/50 of the
// burst (fleet.CreditCap), and a budget whose burst/50 is below one request's
// cost is never allotted. A refill Redis refuses is not retried before
// its RetryAfter (at most AllotIdle). Settle and Refund apply to the
// credit: an overrun is paid from it, a refund goes back to it up to
// what was handed out from it and the cap; the rest is pending and
// settled in Redis by a loop every AllotIdle/3, which also gives back
// (refunds) the credit of a budget not taken from for AllotIdle (150 ms
// by default). Close gives back every credit and settles what is
// pending. Status and the statuses the calls return are Redis's last
// answer, aged to now, plus the credit, less what is pending. With Redis
// gone, calls go to the local budgets as below; the credit is neither
// spent nor given back until Redis answers again.
//
// Exactness. A unit is handed out only after Redis counted it taken, and
// a refund goes back to the credit only up to what was lent from it, so
// the fleet's net use (admitted, plus overruns, less refunds) is never
// more than what the shared budget has let be taken, whose GCRA bound is
// B + L·t from full. Over a span from full (no credit held anywhere)
// the fleet admits at most the allowance, as in the default mode. Over
// any other span it admits at most the allowance plus the credit held
// at its start (at most N·burst/50 for N replicas) plus the overruns
// still pending (charged within a tick, into debt if need be). It admits
// less than the default mode by at most the credit held at the span's
// end (what was taken and not yet handed out: in practice about 100 ms
// of the fleet's rate, never above N·burst/50), plus credit lost (a
// refill whose reply was lost after Redis took the chunk, credit held
// at a Close while Redis is gone), plus what a refund given back late
// finds beyond full; overruns pending at a Close while Redis is gone
// are not charged (as with the local budgets' debts). A refusal's RetryAfter is exact for Redis's state,
// which counts other replicas' credit as spent, so it may be up to
// their credit's worth later than if that credit were back. While a
// refill is in flight, a status may count its chunk as spent or as held.
//
// # When Redis is slow or gone
//
// No call waits longer than Timeout (50 ms by default) for Redis, and no
// call fails for want of it. A call that errs or times out is answered
// by a local quota.Budget for that name, this replica's share of the
// fleet's (fleet.Share: the limits divided by the live replica count,
// Members.Live, the last known, starting from this replica's part of
// what the fleet had spent when Redis last answered, rounded up), and
// Budgets switches to Local mode: later calls go straight to the local
// budgets, and a health check pings Redis every HealthInterval (1 s)
// until it answers within Timeout, then charges the shared budgets with
// what was taken locally (net of refunds) and switches back to Shared.
// A cost beyond the share's burst but within the fleet's is told to
// come back after HealthInterval (fleet.ShareVerdict). OnMode reports
// each switch, for metrics and logs. A reservation taken in one mode
// and settled in the other is settled where the mode is then (a refund
// never takes a budget beyond full, so the error is bounded by the
// reservation). These rules are package fleet's (see its "Semantics"),
// and the simulator applies them too.
//
// # Membership, leases, verdicts
//
// Members heartbeats each replica into one sorted set and counts the
// replicas seen within 3 intervals (one MULTI/EXEC round trip per
// heartbeat), dropping entries dated more than 3 intervals ahead; Live
// is the largest count seen within 3 intervals (fleet.Census), and
// Joined says when a new replica may claim a part of the fixed limits
// and report ready. Claims keeps each replica's part of them in one
// hash, one field per replica, and answers an ask in one script
// (fleet.Claim's rules, fleet.Grant's arithmetic): what the other
// claims leave, no more than was held when the fleet's epoch changed
// since the replica last read it; a claim not asked for within 3
// intervals counts no more. The same heartbeat round trip
// reads the fleet's epoch (epoch.go: a random name kept in Redis, made
// afresh when missing), so a replica learns within a heartbeat that
// Redis lost its data (OnLoss); the run-time keys (package keystore)
// and spend (package spendstore) read the same epoch and write back
// what they hold. Every heartbeat that misses is heard (OnError), so
// an outage no other call noticed is counted. A call Redis answers
// with WRONGTYPE (KeyError) breaks that key alone: the store stays
// Shared. Leases acquires or renews a named lease atomically (SET NX
// PX, or PEXPIRE when already the holder's), so one replica at a time
// owns it, and another takes over once the holder stops renewing for a
// ttl. Channels publishes and subscribes over Redis pub/sub.
package fleetstore
