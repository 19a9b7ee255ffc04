// Package quota enforces per-minute budgets, exactly, in the three
// dimensions LLM providers meter: requests, input tokens and output
// tokens. Sluice keeps one Budget per virtual key and one per provider
// (the account's quota), and takes every request from both before it
// starts.
//
// # Organisation
//
// Budget is pure, like admission.Core and breaker.Breaker: every method
// takes now, it never reads the clock, starts no goroutines and does no
// I/O, and it is not safe for concurrent use (the host serialises calls).
// A now earlier than one already seen is taken as the latest. The same
// sequence of calls always gives the same answers, to the nanosecond, so
// the simulator's budgets are the gateway's.
//
// # Why GCRA, not a fixed window
//
// A fixed window (a counter reset at each minute boundary) lets a client
// take a minute's allowance at 0:59.9 and another at 1:00.0: twice the
// limit within a fraction of a second, which is exactly what the provider
// behind us, metering continuously, will refuse. A sliding log is exact
// but stores every request. The generic cell rate algorithm (GCRA) is
// exact and stores one instant per dimension.
//
// # The algorithm
//
// Each dimension with a limit of L per minute has an emission interval
// T = 1min/L: the time one unit of budget (a request, a token) takes to
// come back. Its state is TAT, the theoretical arrival time: the instant
// at which the dimension would be idle again, had everything taken so far
// been spread at one unit per T. A cost of n is allowed at now iff
//
//	max(TAT, now) + n·T − now ≤ B·T
//
// and then TAT becomes max(TAT, now) + n·T. B is the burst (default L).
// Read it as: once this cost is added, the budget may be at most a full
// burst ahead of now. In the textbook's terms the tolerance depends on
// the cost, τ(n) = (B − n)·T, which for n = 1 is the usual (B − 1)·T;
// with a fixed tolerance a heavy request would be charged as lightly as
// a one-token one.
//
// The same thing, as a bucket: (TAT − now)/T is how full a bucket of B
// units is, draining at L per minute, and a cost passes iff it fits.
//
// From this:
//
//   - From idle (TAT ≤ now) any cost up to B passes at once, and nothing
//     more: a second cost waits for its units to drain.
//   - A cost above B can never pass, however long it waits. Take says so
//     (Verdict.Never) instead of giving a RetryAfter that would lie, so
//     the host answers with an error naming the limit. A token burst must
//     therefore be at least the largest request a key may send.
//   - A refused cost gets RetryAfter, exactly when it would first pass
//     (if nothing else changes): its TAT − now − τ(n), rounded up.
//   - A sustained load gets exactly L per minute, with no boundary
//     effect: single units retried at each RetryAfter pass at exactly
//     T apart after the first burst (each instant rounded up to a
//     nanosecond, never accumulated), so every minute-long stretch after
//     the burst holds exactly L of them, wherever it starts.
//
// # The guarantee
//
// Over any stretch of time of length d that ends with a Take that passed,
// what was taken in it, plus overruns charged in it (see below), less
// refunds made in it, is at most
//
//	B + L·d/1min.
//
// So never more than B at once; never more than B + L in any minute (2L
// with the default burst, and only as a full burst at one end of the
// minute and the minute's refill through it, never 2L within a few
// seconds, which would need d near a minute); and over a long run, L per
// minute. Without refunds and overruns (the requests dimension, as a
// rule), the bound is on what passed, plain.
//
// # Exact arithmetic
//
// T is 60e9/L nanoseconds, rarely a whole number, and rounding it would
// make the rate drift (at L = 7 a minute, T is 8571428571.43 ns). So
// TAT − now is kept as whole nanoseconds plus a remainder in units of
// 1/L ns, with 128-bit products where a product could pass 64 bits: every
// multiple of T is exact, from 1 a minute to the largest int64. The only
// rounding is of RetryAfter and Reset, up, to a whole nanosecond, so
// neither is ever early. Debt saturates at about 146 years, and New
// refuses a burst that would take more than a century to refill; below
// that, nothing overflows.
//
// # Reservation, reconciliation, debt
//
// Output tokens are known only after the call. The host takes the
// request's allowance (its max_tokens) with Take at admission, so a key
// cannot start more than its budget could pay for, and afterwards calls
// Settle with the count the provider reported:
//
//   - Used less than reserved: the difference is refunded. TAT moves
//     back by its cost, but never earlier than now: a refund can bring a
//     budget back to full, never beyond, so nothing beyond idle is ever
//     handed out. A reservation returned whole, with nothing taken since,
//     leaves the budget exactly as it would have been without the
//     request. (A reservation returned later gives back its full cost,
//     even though the minute it sat in has passed: a reservation is a
//     promise, not use, and a key is not charged for how long a slow
//     provider held it. That is why refunds count in the guarantee.)
//   - Used more than reserved (an estimate that fell short: input
//     tokens counted before the call, or an output allowance smaller
//     than what came back): the excess is charged, unconditionally. That can push TAT beyond a
//     full burst ahead of now: the budget is in debt, Status reads
//     Remaining 0, and every later cost waits, exactly until the debt and
//     its own cost fit, as RetryAfter says. Even a zero cost waits: the
//     dimension is over its limit until the debt is paid.
//
// Refund returns all of a Take for a request that never ran (refused
// after Take by a later check, or its client gone while it waited).
//
// # Usage
//
//	b, err := quota.New(quota.Limits{
//		quota.Requests:     {PerMinute: 600},
//		quota.InputTokens:  {PerMinute: 400_000},
//		quota.OutputTokens: {PerMinute: 80_000},
//	})
//	cost := quota.Cost{Requests: 1, InputTokens: prompt, OutputTokens: maxTokens}
//	v := b.Take(now, cost)
//	// !v.OK && v.Never: refuse with an error naming v.Dimension's burst.
//	// !v.OK: refuse with Retry-After v.RetryAfter (429).
//	// v.OK: run it, then b.Settle(now, cost, used) exactly once (or
//	// b.Refund(now, cost) if it never ran).
//	// b.Status(now) gives the rate-limit headers (see Status).
package quota
