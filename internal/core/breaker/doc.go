// Package breaker is a per-provider circuit breaker that trips on
// slowness as well as on errors, so that a brownout (the provider still
// answers 200, just four times slower) moves traffic away as surely as
// an outage does; and that fails back gradually, so a provider that
// recovers in waves is not flapped on and off.
//
// # Organisation
//
// Breaker is pure, in the style of etcd raft's RawNode and x/time/rate's
// ...N(now) methods: every method takes now, it never reads the clock,
// never sleeps, starts no goroutines and does no I/O, and it is not safe
// for concurrent use (the host serialises calls). Time passes only
// through now; a now earlier than one already seen is taken as the
// latest. Every method that takes now first applies the transitions due
// by then, so Tick at NextTimer is needed only to make them happen
// without traffic. Transitions come out as values, drained by
// Transitions, each exactly once. The same sequence of calls always
// gives the same transitions, so the simulator's breaker is the
// gateway's.
//
// # States
//
//	          error_rate, slow_rate,             OpenFor
//	          consecutive_errors
//	Closed ───────────────────────────▶ Open ─────────▶ HalfOpen
//	  ▲                                 ▲  ▲  probe_*,       │
//	  │                                 │  └─ half_open_ ────┤
//	  │ recovered                       │     timeout        │ probes_ok
//	  │                  error_rate,    │                    │
//	  └──── Recovering ─ slow_rate ─────┘                    │
//	        10%→25%→50% ◀────────────────────────────────────┘
//	        (step_up)
//
// Weight is the share of new traffic the provider should get: 1 Closed,
// 0 Open, 0 HalfOpen (only probes, which Allow rations), the current
// step's share while Recovering. A router, not this package, turns
// weights into choices. Allow refuses (ErrOpen) only when Open or when
// every probe slot is taken; in Closed and Recovering the router's
// weights already decided.
//
// # What counts
//
// Every call is counted once, as a success, an error or slow, against
// the time it started (in 250 ms buckets):
//
//   - Error: a 5xx (529 included), a connection error, a timeout.
//     (Lifecycle's breakerOutcome adds 401, 403, 408 and a 404 that says
//     the model or path is unknown; any other 4xx is the client's.)
//   - Slow: an OK call whose latency is over its threshold plus its
//     Outcome.Allowance (the time a whole answer's output takes at the
//     slowest healthy rate: a long answer is the client's choice), or
//     any call reported Slow while still in flight.
//   - A 429 (RateLimited) is not a call. It says the provider is pacing
//     this client, not that it is sick: counting it as an error would
//     trip the breaker on our own burst and fail over to a provider that
//     will pace us too; counting it as a success would dilute a real
//     error rate with fast refusals. Acting on 429s is the concurrency
//     limiter's job (package limit counts them as drops); the window
//     keeps a separate count for metrics.
//   - Cancelled (client gone, lost hedge) is not counted, unless the
//     call was already flagged slow.
//
// The breaker trips when errors/calls >= ErrorRate ("error_rate",
// checked first) among the calls started in the last Window, or
// slow/calls >= SlowRate ("slow_rate") among those started in the Window
// that ends a slow threshold ago, each with at least MinCalls calls.
// MinCalls keeps one slow call in a quiet window from reading as a 100%
// slow rate. Outcomes of calls admitted before the latest trip are not
// counted: that period has been judged, and its stragglers would only
// re-trip the recovery.
//
// # Evidence, not the clock
//
// Counting calls by when they started, not by when their verdict came,
// makes the rates measure what a brownout is: a stretch of time in which
// the provider's calls went badly. The slow rate judges only start times
// at least a slow threshold old, because only then is every call's fate
// known: it answered, or it was flagged slow as it passed the threshold
// in flight. (Newer starts are known only if they answered fast, and
// counting them would bias the share towards health.)
//
// So the defaults (Window 12 s, both rates 20%) behave the same at 2
// requests a second and at 2,000:
//
//   - a provider slow for every call trips 20% × 12 s = 2.4 s of start
//     times after it turned, plus the slow threshold it takes to know:
//     seed 000's brownout (1 s calls turning into 30 s ones, a 2 s
//     threshold) opens the breaker about 4.4 s in;
//   - a spike shorter than 2.4 s can never be a fifth of the window's
//     calls, however many it catches, so it never trips: failover is
//     gated behind a sustained stretch of slowness, as seed 004 asks;
//   - a partial brownout, 30% of calls slow, trips once it is a fifth of
//     the window's calls, about 8 s in;
//   - a healthy provider passes a threshold of twice its p95 on a few
//     per cent of calls at most, a tenth of the rate that trips;
//   - at low rates MinCalls (10) is what waits: at 2 requests a second a
//     brownout trips about 5 s in.
//
// An error, like a success, is known when its call ends, so the error
// rate judges every start of the last Window, the newest included: an
// outage (every call refused) trips 2.4 s in, or as soon as MinCalls
// calls have failed, whichever is later.
//
// # A run of errors
//
// Below MinCalls calls a Window the rates never judge: a provider down
// hard at one request every 4 s sees 3 calls in 12 s, and never trips.
// So a Closed breaker also trips on ConsecutiveErrors (default 5) calls
// in a row that ended Error ("consecutive_errors"), however few the
// window holds. An OK or slow call ends the run; 429s and cancelled
// calls neither count nor break it, as above; client-caused 4xx never
// reach the breaker as errors (lifecycle's breakerOutcome). Half-open
// and fail-back are unchanged: the run counts only while Closed.
//
// The default was chosen by measurement: the hard-down times are
// lifecycle's TestLowTrafficHardDown (15 requests 4 s apart), the rest
// sluice sim (seed 9, 5 minutes, a primary and a healthy backup, 0.8 to
// 1.2 s calls; the shipped scenarios compared byte for byte):
//
//	                              N=3      N=5      N=10     off
//	hard down, 1 request / 4 s:
//	  trips after (503s)          8 s      16 s     36 s     never
//	  trips after (500s: a same-
//	  target retry comes first)   4 s      12 s     32 s     never
//	5% sporadic 500s, 20 req/s:
//	  trips                       4        0        0        0
//	10% sporadic 500s, 20 req/s:
//	  trips                       5        1        1        1
//	every shipped scenario        identical at N=3, 5 and 10
//
// (The one trip at 10% is the error-rate window's, with or without the
// run. No shipped scenario has 5xx errors: thin-tail, partial and the
// other brownouts are slowness, rate-limited is 429s.) N=3 trips on
// chance runs of sporadic errors, a provider answering 95% of calls
// taken out four times in five minutes; N=10 leaves a hard-down
// provider in rotation for 36 s at low traffic. Five is also Envoy's
// outlier detection default (consecutive_5xx). In every column no
// client saw a primary error: a failover costs no retry budget
// (lifecycle), so the run's cost is only the failed calls' own time.
//
// # The slow threshold
//
// A fixed SlowThreshold, or one derived from the provider's own healthy
// latencies: SlowHeadroom (2) × their p95, never less than SlowFloor,
// and SlowDefault until MinCalls samples exist. Never the median: half
// of all calls are above the median by definition, and a breaker whose
// threshold sits there lives open. Healthy means a success that was not
// slow, seen while Closed (at full weight: a provider at a 10% share is
// lightly loaded and would teach a threshold that is too tight). The
// last HealthySamples such latencies are kept, so memory is bounded.
// Since slow calls never enter the sample, a step brownout cannot raise
// the threshold that detects it. A ramp could: each call a little slower
// than the last stays under twice the p95 of the calls before it, and a
// ring of recent samples follows the provider from 1 s to 20 s without
// ever calling it slow. So the p95 is marked once a minute and the
// threshold rests on the lowest mark of the last BaselineMemory (10
// minutes): a ramp faster than that trips, a drift slower than that is
// followed.
//
// # The in-flight slow signal
//
// A brownout's slow calls take a long time to complete, so a breaker that
// waits for completions reacts as late as the provider is slow. Each
// Ticket carries the SlowAfter it is judged by; the host arms a timer for
// the call's start plus SlowAfter and calls Slow if the call is still in
// flight then. The call counts as slow at that moment; its later Done
// counts nothing more, whatever the outcome (an error after a slow flag
// is still one call, counted as slow). Lifecycle's engine already flags
// slow calls this way for its limiter.
//
// # Half-open cannot stick
//
// resilience4j's half-open state waits for its permitted calls to
// complete; if one never completes, or traffic stops, it waits forever
// unless maxWaitDurationInHalfOpenState is set, and it is not by
// default; failsafe-go's half-open state likewise holds a probe's permit
// until that execution records a result. Here the exits are always
// armed:
//
//   - a probe still in flight at ProbeTimeout (default: its slow
//     threshold) counts as slow, and the breaker reopens
//     ("probe_timeout");
//   - a HalfOpen without a verdict at HalfOpenMaxWait reopens
//     ("half_open_timeout") and probes again after OpenFor (a Steady
//     breaker instead waits for its host's next probe: it has one every
//     ProbeInterval);
//   - a probe that ends in a 429 or is cancelled frees its slot for
//     another probe: it proves nothing either way.
//
// NextTimer always names the next of these deadlines, so a host that
// Ticks on it never leaves the breaker waiting on an event that may not
// come.
//
// # Fail-back
//
// All Probes must succeed fast. Then the window starts afresh, the
// provider takes Steps[0] (10%) of traffic, and it moves up a step (25%,
// 50%, then Closed) once it has stayed calm for StepHold with at least
// Probes calls at the step. Calm means both window rates below half
// their trip thresholds; anything worse, even once, restarts the hold,
// and a trip condition sends it back to Open (a re-trip). The gap
// between calm and trip, the evidence needed per step, and a restart
// from the first step after every re-trip are the hysteresis. (At a
// small share a still-sick provider may take a while to gather the
// MinCalls calls a re-trip needs; until then it is not calm, so it stays
// at its step.) A step with no traffic does not advance on silence.
//
// Each consecutive failed recovery (a bad probe or a re-trip) also
// doubles the open time, up to OpenForMax, so a provider flapping every
// few seconds is retried a handful of times in ten minutes rather than
// every OpenFor. Reaching Closed resets the backoff; a HalfOpenMaxWait
// timeout, which is no evidence against the provider, does not add to
// it. The backoff protects users, who are the probes of a breaker probed
// with traffic. A Steady breaker's probes are its host's own one-token
// calls, which cost users nothing, so it never backs off: it stays open
// for one ProbeInterval and then probes every ProbeInterval, however
// often they fail, and sees a recovery within one interval plus one
// call.
//
// # What the host must do
//
//   - Ask Allow before routing a call to the provider; report every
//     granted Ticket Done exactly once (Cancelled if nothing else).
//   - Arm a timer for SlowAfter per call and report Slow when it fires.
//   - Use one latency signal throughout (TTFT for streams is best).
//   - Tick at NextTimer, and drain Transitions to log them.
//   - Keep one Breaker per provider. Each replica judges from its own
//     evidence; a fleet-wide verdict would need a shared store, which is
//     out of this package's scope.
package breaker
