// Package chaos plays faults against Sluice running as real processes on
// loopback and checks what every client got, what the providers were
// left doing, and what the gateway kept: `sluice chaos`, whose table is
// docs/RELIABILITY.md.
//
// # Goals
//
//   - Real processes, real sockets: sluice serve, one sluice mock per
//     provider, a redis-server of the run's own, all started from the
//     binary under test, each fault on fresh ones so no row inherits
//     another's state. Unit tests already cover the gateway's paths one
//     at a time in-process; this is the same contract under a real
//     kernel's resets, half-closed sockets, full buffers and signals.
//   - Every row checked the same way, and failed loudly: exactly one
//     well-formed answer per request in the client's dialect; no call
//     left running upstream 100 ms after its client left; no slot, queue
//     place, budget reservation, body buffer or shared generation held
//     once traffic stops; goroutines back to baseline; RSS not growing
//     with the requests served; no idempotency key answered twice.
//   - One command regenerates the table; a short mode (2 s per fault)
//     is what CI runs.
//
// Non-goals: measuring speed (docs/BENCHMARKS.md does) and hours-long
// soaks; a fault here runs for seconds to minutes.
//
// # Organisation
//
//   - faults.go, system.go: the table. A fault starts its processes
//     through the run, calls run.begin, drives its traffic, and adds
//     its own checks (and the evidence that its injection happened: a
//     fault that did not happen proves nothing).
//   - run.go: the checks every row shares (run.measure) and their
//     bounds, each with its reason.
//   - client.go, traffic.go: the clients. A call is judged as an SDK
//     would judge it: a whole answer, an error in the dialect's shape
//     (with Retry-After where one is due), a stream ending in its
//     terminator or an error event, or a visible break. Closed loops
//     (callers that wait for their answer) and open loops (arrivals
//     that do not) drive them; a quarter of requests carry an
//     Idempotency-Key and a twin sent at the same moment.
//   - relay.go: a TCP relay in front of every provider. It injects what
//     the mock cannot play itself (a stall mid-stream, a slow link, a
//     host that comes and goes) and counts the gateway's open
//     connections to the provider, which the goroutine bound needs. The
//     mock's own failure modes (X-Mock-Fail: reset, hang, malformed,
//     truncate) are used where they exist.
//   - procs.go, metrics.go: the mocks, gateways and Redis a fault runs,
//     started, killed and stopped by their own PIDs through
//     internal/harness/procs; the gateway's /metrics and the mock's
//     /stats, read as a client would.
//   - report.go, main.go: the Markdown table, and the command.
//
// # Why these faults run this way
//
// The gateway's timeouts are shortened (write_timeout, stream_idle_timeout,
// a provider's timeout, read_header_timeout: 1 s) so that a fault's
// consequence lands inside its run; each row says which. The primary's
// breaker is off in the upstream faults so every call meets the fault at
// the rate the row states, and on where the breaker's reaction is part of
// the fault (a flapping provider). Requests go to a model whose next
// target is a healthy provider of the other vendor, so failover,
// translation and the stream relay all take part.
package chaos
