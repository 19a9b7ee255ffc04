// Package pool picks the replica of a self-hosted model pool (N vLLM or
// SGLang servers behind one provider) that a call goes to.
//
// # Goals
//
// A request that fans out over replicas should land where it will get
// its first token soonest, and never on a replica that is down, tripped
// or drowning in its own queue. The gateway already knows how many of
// its calls each replica holds; a replica that exports Prometheus metrics
// also says how many requests it is running and queueing (from every
// client, not only this gateway) and how full its KV cache is.
//
// # Non-goals
//
// Prefix-cache affinity, LoRA adapter placement and prefill/decode
// disaggregation: they need knowledge of the prompt that the pool does
// not have. Randomised choice (power of two choices): pools are small
// (a handful to a few dozen replicas), so every replica is scored and
// the choice is exact and reproducible.
//
// # How a replica is chosen
//
// Least-loaded (the default) filters, then scores:
//
//   - out: a replica whose breaker is open (a half-open one takes only
//     its probes), or, when it has a metrics endpoint, whose last
//     successful scrape is older than StaleAfter (drained: it may be
//     gone);
//   - passed over while another will do: a replica whose queue
//     (waiting requests, from its metrics) is past the cap (drained until
//     it drains), or that holds its own limit of this gateway's calls;
//   - scored: cost = (load + 1) × latency × (1 + KV cache use) / share,
//     where load is this gateway's calls in flight there plus the
//     requests its metrics show from others, latency is a peak-sensitive
//     moving average of its recent first-token times that decays while
//     it is not used (so an idle slow replica is tried again), and share
//     is its breaker's fail-back weight. The lowest cost wins; ties go
//     to the replica after the last one picked, so equal replicas take
//     turns.
//
// Round-robin takes the usable replicas in turn, ignoring load; it is
// there for comparison and for operators who want it.
//
// # Organisation
//
// Pool is pure, like the rest of Sluice's decision core: it never reads
// the clock (every method takes now), does no I/O and starts no
// goroutines, and is not safe for concurrent use. The lifecycle engine
// owns one Pool per pooled provider, asks it for a replica when a call
// starts and reports the call's end; the gateway scrapes the replicas'
// metrics at the edge, reads each page into a Load (package
// internal/server/scrape, which owns the Prometheus parsing) and hands it
// to Observe (through the engine), and the simulator does the same from
// its modelled replicas.
// Limit is the pool's concurrency limit, the sum of its usable
// replicas' limits, which admission enforces for the provider.
package pool
