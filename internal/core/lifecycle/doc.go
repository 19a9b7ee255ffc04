// Package lifecycle decides the life of every request after its headers
// are read: route it to the first of its targets whose breaker takes it;
// admit it, queue it or refuse it there; start its upstream call; watch
// the call and flag it slow the moment it passes the slow threshold while
// still in flight; hedge it when it has no first byte in time, or retry
// it on another target when it fails safely, each under a budget; give up
// on it at its deadline; and turn every outcome into a sample for its
// provider's adaptive concurrency limit and breaker.
//
// A request has at most two upstream calls: its first (attempt 0) and a
// second (attempt 1). The second is one of four kinds (SecondKind): a
// hedge (Ready.Second, fired by a timer when the first has no first byte
// in time; hedge.go), a first-token call (Ready.Second, fired when the
// first has no first token by a deadline derived from its target's
// recent time to first token, on by default; firsttoken.go), a rescue
// (Ready.Second: the first call is slow on a provider whose breaker is
// open or recovering; rescue.go) or a retry (Engine.Retry, asked by the
// host after a safe failure; retry.go). A prompt too long for its model
// goes to the model's context fallback, before the call or after the
// provider's refusal (context.go).
// Synthetic probes (Ready.Probe, FinishProbe; probe.go) belong to no
// request. The first call to report a first byte wins (Commit); nothing
// is hedged or retried after that. The host reports every call's end
// with End and its attempt number, and the request completes when both
// calls have ended. A committed stream that breaks is not restarted but
// continued (Engine.Continue, asked by the host; continuation.go): the
// decision of where and how, and the stall deadline that says a quiet
// stream has broken, are the core's; the continuation call is the
// host's own, outside the request's two.
//
// When a provider's breaker opens, the engine acts for the requests it
// holds there: waiters move to the next target (reroute); slow calls are
// rescued onto it, or, when it has no room, stranded until room frees,
// least deadline left first (rescue.go); with no target to move to, a
// slow call is answered early once its provider more likely than not
// misses its deadline (Ready.Abandon; reach.go). A new request whose
// every target is out of rotation is served through a provider open for
// slowness that can still answer it in time and has a slot free
// (reach.go), waits for a synthetic probe's verdict when one is due
// within its patience (hold.go), or is refused at once. A target that its
// model's fallback evals degraded (SetEvalDegraded; package evals) is
// ranked after every target that is not, a last resort rather than out
// of rotation (evaldegraded.go).
//
// A provider may be a pool of replicas (pool.go, package pool): one
// scope to admission and to routing, whose limit is the sum of its
// usable replicas'; which replica a call goes to is picked by the pool
// when the call starts (a waiter's load picture is the one at its
// start, not its arrival), and the host reads it with Replica. The
// replicas' scraped metrics come in through Observe, as outcomes do.
//
// Policy lives here, not in the hosts: what an HTTP status and a call's
// ending mean (StatusOutcome, Ending), where a model routes and how long
// its requests may take (Route, built from the config by
// policy.FromConfig), which call an
// ending belongs to (End), a request's class (Classify), whether and how
// a background request is degraded (Degrade), what a refused request is
// told (Answer), and whether a failed call is retried (Retry). The
// gateway and the simulator only carry out what it decides, each in its
// own terms.
//
// # Organisation
//
// Engine is the decision state machine, in the style of etcd's raft
// RawNode: not safe for concurrent use, it never reads the clock (every
// method takes now), never sleeps, starts no goroutines and does no I/O.
// Outcomes come in as method calls; decisions come out as a Ready value
// listing the requests to start, refuse, expire, answer early or send a
// second call for, the probes to send, and the breaker transitions to
// log. Time passes only when the host calls Tick, at or after
// NextTimer. NextTimer is the only timer a host arms: it covers every
// deadline the engine keeps, the breakers' and pools' timers, and the
// end of a windowed limit's window that holds samples, so a window of
// 429s is acted on when it ends even if traffic has stopped.
//
// The package is the pure core and nothing else: its configuration is
// built from the YAML by package policy, and the package imports nothing
// beyond the pure standard library and the core (internal/core's purity
// test checks this). Two hosts drive the same Engine, through its
// exported methods only:
//
//   - internal/server/runner's Runner is the concurrent shell the gateway
//     uses: a mutex, one timer for NextTimer, and one channel per
//     waiting request;
//   - the simulator (package sim) calls Engine directly on a virtual
//     clock, arming the same NextTimer.
//
// So a decision the simulator shows is the decision the gateway makes.
//
// # What the limiter hears
//
// Per scope (a provider), a limit.Algorithm moves the concurrency limit
// that admission enforces. The engine feeds it one sample per call:
//
//   - a call still in flight at SlowThreshold (for the ttft signal: with
//     no first byte yet; without one, at its breaker's slow threshold) is
//     reported as a drop right then, and its later completion is not
//     reported again: with a 30 s brownout, a completion-based signal
//     would arrive 28 s too late;
//   - upstream 429/529/503 and connection errors are drops, and so is a
//     timeout past the slow threshold; a shorter deadline was the
//     client's own choice, and one client asking for a millisecond must
//     not shrink the limit for everyone;
//   - other upstream errors, and calls the client abandoned, are not
//     samples at all: a fast failure is not a low latency;
//   - a success reports the configured latency signal: time to first
//     token (the default for streams, since end-to-end time mostly tracks
//     output length), time per output token, or end-to-end time;
//   - every sample carries the scope's in-flight count from the start of
//     its instant, so calls a tick simulation settles at one instant all
//     see the count from before the tick, as seed 000's do.
//
// Health checks (/healthz, /readyz) never reach the engine: the gateway
// answers them itself. Synthetic breaker probes (probe.go) are not
// samples for the limiter either.
//
// # Semantics
//
// Windowed limits' ticks. The gateway's shell used to tick the engine at
// least once a second whenever a scope had a windowed limit, while the
// simulator ticked only at the engine's other timers, so in an idle
// spell the two closed windows at different moments. Now there is one
// rule, in NextTimer: a windowed limit is ticked exactly when a window
// that holds samples ends (limit.WindowedAIMD.NextTick). An empty window
// changes nothing when it ends, so it asks for no tick; ticking at the
// end itself, rather than up to a second after, puts the decision at the
// same moment on both clocks, and a draining simulation still ends.
//
// These rules were once written in each host; where the copies
// disagreed, this is what holds now:
//
//   - Degradation (Degrade). Who: a background request of a model with
//     degrade:, unless its key opts out. When: the engine is under
//     pressure for it (ShouldDegrade), or its key's budget is low, below
//     budget_below of its burst in some dimension, wherever the budget is
//     kept: in the engine's books (ShouldDegrade reads them), or, in a
//     fleet sharing a store, in the store (DegradeAsk.Shared). What:
//     another model, a lower max_tokens, a shorter history, each only
//     where it changes something. (The simulator used to ignore the
//     store's budget, so a fleet's background work ran at full size until
//     its key's budget refused it; the gateway degraded it first. The
//     budget is the client's to spend, so a fleet spends it the way one
//     gateway would.) The gateway reads the store's figure from its last
//     answer, sparing a round trip; the simulator's store is in memory and
//     is read as it stands. Neither host trims a simulated prompt: it is
//     one message, and the last message is never dropped.
//   - Refusals (Answer): a key's budget is 429 with its exact wait; a
//     request larger than a budget's burst is 413; a deadline passed in
//     the queue is 504; everything else, the large-context lane's budget
//     included, is an overload (503, or 529 on Anthropic's API), with
//     x-should-retry: false when a retry is futile.
//   - Priority (Classify): a key's class is its ceiling, which its
//     header may lower, never raise; without a key, only a declared
//     critical credential is critical. The simulator's streams without a
//     key stand for declared callers: the class they draw is theirs.
//   - Retries (Retry, RetryCall): a host asks for every call that failed
//     before any byte reached the client, and the engine answers yes only
//     for a first call that failed with no second call ever sent, or for
//     a failed same-target retry, which moves to the next target. (Each
//     host used to check "attempt 0, nothing else live" itself first;
//     the engine's own check made theirs redundant.) The answer names
//     the target, the wait and the rule (RetryWhy: next, same, wait); a
//     host only carries it out and shows the rule.
//   - Endings (Ending): a 404 from the Responses API says the provider
//     lacks the endpoint, not that it fails, and counts as cancelled.
//     Any other 404 counts against the provider only with UnknownModel
//     (the provider said the model or path is unknown); a 404 about what
//     the body names is the client's (breakerOutcome).
//   - One instant, several verdicts: a host that reports a call's end
//     at the same instant as its deadline or slow flag (a tick host, or
//     a late timer) gets seed 000's order: answered, then timed out,
//     then flagged slow; latencies are judged from Outcome.Ended (or the
//     deadline), not the report's time.
//   - Whole answers: with the Total signal a call's slow checks allow
//     its output's time at MinTokenRate (generation); in flight, its
//     output cap's (books.perAnswer: max_tokens, or the default a request
//     without one reserves) at the rate the scope showed.
//   - Output caps: every request has one, named or not (its max_tokens,
//     else its route's default, else DefaultMaxOutput, never more per
//     answer than its key's whole output budget); it reserves it, and
//     its host relays at most OutputLimit of its answer.
package lifecycle
