// Package workload is the one model of the traffic around the gateway,
// shared by every host that needs it: when clients arrive (Schedule,
// Arrivals), which class each request is (Mix) and how long its prompt
// is (Sizes), whether and when they retry (Retry), and how a vLLM-like
// upstream admits calls (Capacity). The rest of an upstream's behaviour
// (latency, brownouts, failures) is package upstream's. Each is pure,
// like the lifecycle engine: no clock, no sleeping, no goroutines; time
// comes in as an offset from the start, randomness as a seeded
// *rand.Rand (or, for Mix, one uniform draw) the host owns, and
// decisions go out as values ("next arrival at 1.25 s", "retry after
// 300 ms", "this call waits", "background"). The simulator (package
// sim) drives them on its virtual clock, the load generator (loadgen)
// and the mock provider (mock) on the wall clock, and package scenario
// builds them from a scenario file once for all (Clients.Schedule,
// Clients.Spacing, Clients.PriorityShares, Clients.Prompt,
// Retry.Policy), so what `sluice sim` predicts is what `sluice load`
// sends and `sluice mock` serves.
//
// # Semantics
//
// Where the hosts' former copies disagreed, this is what holds now:
//
//   - A rate step applies from its At on, at At itself included. A step
//     that comes while an earlier ramp is still under way cuts that ramp
//     short, and its own ramp starts from wherever the cut ramp stood: the
//     rate jumps only at a step without a ramp. (The simulator used to
//     delay such a step until the ramp ended; the load generator cut the
//     ramp too, but started the new one from the cut ramp's target.)
//   - Arrivals run up to the end inclusive, give or take a microsecond of
//     rounding: at 20 req/s for 1 s, twenty even arrivals, the last at
//     1 s. (The simulator used to stop short of the end, and the load
//     generator to include it.) Fractions of an arrival carry across
//     segments and, in tick mode (PerTick), across ticks, where a tick
//     gets the rate's integral over it. (The simulator used the rate at
//     the tick's start, which differs only on a ramp.)
//   - Poisson arrivals are a Poisson process at the scheduled rate,
//     ramps and steps included: the integral of the rate grows by an
//     Exp(1) draw between arrivals. (The simulator used to draw each gap
//     at the rate where the gap began, which lags a ramp and can leap
//     over a step up.)
//   - Jittered retries draw from [0, backoff] with both ends included.
//   - Patience bounds retries whether or not clients abandon at
//     patience. (The simulator used to bound them only for clients that
//     abandon.)
//   - An answer that has started (a 2xx status arrived) is never retried.
//     (The simulator used to retry a stream cut off by a gateway crash
//     after its first byte.)
//   - A priority mix draws class i with probability share i / the sum
//     of the shares, from one uniform draw a request; a mix with no
//     shares is all interactive. When rounding leaves the draw past the
//     last share (a draw just below 1), the class is the last one with
//     a share. (The simulator used to answer interactive there, the
//     load generator the last class with a share.) The load generator's
//     rule is the one kept because a mix that gives a class no share
//     must never send one: a stream of critical and background traffic
//     would otherwise, however rarely, send an interactive request its
//     scenario says it never sends. No shipped scenario draws that close
//     to 1 (their sim output is unchanged); TestMixClass pins the rule.
//   - A prompt or reply length is uniform over [Min, Max], from one
//     draw, and a fixed length draws nothing. (Both hosts drew so
//     already, each with its own copy.)
//   - Only calls that generate go through Capacity: an injected failure
//     that replaces the whole call (status, hang, reset before any byte)
//     never holds a slot, waits or is refused. (The simulator used to
//     queue them and hold a slot for them, a hang for ever.)
//
// The simulator still reads the batch slowdown once, when a call starts,
// where the mock re-reads it for every token: following the batch token
// by token would cost the simulator an event per token.
package workload
