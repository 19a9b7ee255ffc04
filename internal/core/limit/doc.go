// Package limit holds adaptive concurrency-limit algorithms: given
// samples of completed, failed or slow calls, each computes how many
// calls to an upstream may be in flight at once.
//
// The algorithms are pure: they take time only from Sample.Now (or
// WindowedAIMD.Tick's argument), never read the clock, never sleep,
// start no goroutines and do no I/O, so the gateway and its
// deterministic simulator run the same code. They are not safe for
// concurrent use; the host serialises calls.
//
// # Algorithms
//
//   - Fixed: a constant. Reacts to nothing.
//   - AIMD (after Netflix AIMDLimit): reacts to drops, and to successes
//     slower than a threshold, per sample: ×0.9 on overload, +1 on
//     success while at least half the limit is in use.
//   - WindowedAIMD (after an LLM-gateway write-up): reacts to drops, the
//     p95 latency and the maximum queue wait of a 10–30s window, once per
//     window: ×0.7 on overload then a cooldown, else +1. Suited to LLM
//     traffic, whose per-call latency is dominated by prompt and output
//     length rather than load.
//   - Gradient2 (Netflix Gradient2Limit): reacts to the ratio of a long
//     average RTT to the latest RTT, tolerating 1.5× growth; drops shrink.
//   - Vegas (Netflix VegasLimit): reacts to the estimated queue,
//     limit·(1 − minRTT/RTT); drops shrink.
//
// New builds any of them by name from Params, a flat struct with yaml
// tags. Defaults and their sources are documented on each constructor's
// constants; every place this package departs from Netflix is explained
// on the type concerned.
//
// # Dropped samples
//
// The latency of a Dropped sample is ignored by every algorithm. A fast
// failure is not a low RTT: a 429 returned in 2ms says the upstream is
// full, and fed as an RTT it would tell a latency-based algorithm that
// the upstream is idle and the limit should rise. Drops are counted as
// overload instead.
//
// # What the host must do
//
//   - Choose the latency signal: time to first token, time per output
//     token, or end-to-end time. End-to-end time mostly measures how much
//     the model chose to write; TTFT or per-token time track load. Use
//     the same signal for every sample of one limiter, and set thresholds
//     (slow_threshold, latency_threshold) in its terms.
//   - Flag slow calls while they are still in flight: when a call passes
//     the slow threshold, feed a Dropped sample at that moment, and do not
//     feed the call's completion later. Waiting for a stuck call to finish
//     delays the backoff by exactly the time the upstream is overloaded,
//     and feeding both would count one call twice.
//   - Exclude health checks, and any call that says nothing about upstream
//     capacity (cancelled by the client before a response, rejected
//     locally), from the samples.
//   - For WindowedAIMD, call Tick at NextTick so a window is closed even
//     when no further samples arrive (lifecycle.Engine.NextTimer does).
package limit
