// Package loadgen is `sluice load`: it replays a scenario file's clients
// against a real gateway over HTTP and prints the same outcome table as
// `sluice sim`, so a simulated run and a measured one can be compared cell
// by cell.
//
// Only the client side of the scenario is read: clients:, the seed and
// duration, and the gateway config's mapping of models to providers.
// upstreams: and process: describe the other side; the gateway at the
// target runs whatever configuration it was started with, and the row is
// named after the scenario. With --policy NAME the clients are that
// policy's (its retry and send_deadline, scenario.Clients.For) and the row
// is named after it; the gateway must then be started with the same
// policy's config (sluice serve --config SCENARIO --policy NAME), which
// nothing here checks.
//
// # The client model
//
// Arrivals are open loop: requests arrive at the scenario's rate whatever
// happened to earlier ones, each in its own goroutine, the way independent
// users arrive. A closed loop (a fixed pool of workers) would slow its own
// arrivals as the gateway slowed and hide exactly the overload a gateway
// must survive. The arrival times come from workload.Arrivals, the model
// the simulator runs too, and the generator sleeps until each one. The
// rate is piecewise: each step holds its rps from its time on, or ramps
// linearly to it from the rate in force. Even arrivals fall where the
// integral of the rate crosses each whole number, up to the duration
// inclusive; Poisson arrivals where it has grown by an exponential draw,
// seeded by scenario.seed, which is a Poisson process at the
// instantaneous rate.
//
// Each request goes to the chat endpoint of the dialect its model's first
// provider speaks (/v1/chat/completions or /v1/messages), with a prompt of
// about prompt_tokens tokens (four characters each) cut from a text made
// from the seed, and a priority drawn by the configured shares, sent as
// X-Sluice-Priority.
//
// clients.streams adds independent streams (tenants, kinds of work), each
// issued from its own goroutine with its own arrivals and draws, its own
// model, rate, priorities, prompt size and max_tokens. A stream with a key
// (clients.key, streams[].key: a keys[] entry of the gateway config) sends
// the key's plaintext from scenario.keys, as Authorization: Bearer on
// OpenAI-style endpoints and x-api-key on Anthropic's; a key with a
// priority of its own sets its requests' class. The report then breaks
// the row down by stream.
//
// A user's patience runs from the first attempt. Clients that abandon (the
// default) cancel the HTTP request when it runs out; the others wait on
// and an answer after it is late. Each attempt may also have a timeout of
// its own (clients.timeout, an SDK's request timeout): an attempt with no
// first content by then is cancelled alone and ends as a lost connection
// would, which the retry policy may retry; once content has come it is no
// longer timed. Each attempt tells the gateway its deadline, the timeout
// cut to the patience left (X-Sluice-Timeout, as the official SDKs send
// theirs in X-Stainless-Timeout), unless clients.send_deadline is false.
// Retries follow clients.retry as
// workload.Retry decides them, for the simulator too: on a shed, a 429, a
// 5xx other than 504, or a connection error; up to max_attempts in all;
// never once patience has run out, and never after a 2xx status, because
// an answer that has started cannot be taken back. "backoff" waits
// base·2^(n−1) up to cap; "jittered" draws from [0, that], both ends
// included, but waits at least the server's Retry-After-Ms (or
// Retry-After), as the vendors' SDKs do, and stops when the answer says
// X-Should-Retry: false. "sluice" is the client package: each stream has
// one workload.Governor, which may shed a new request locally before it
// is sent (adaptive throttling, counted Shed) and pays every retry from a
// retry budget.
//
// # Minute by minute
//
// The row carries a report.Timeline in scenario time (wall time divided
// by --time-scale), its events taken where the simulator takes them:
// arrivals, retries, local sheds, refusals (429, 503, 529, with how long
// they took in real time), attempts timed out, interactive answers with
// their TTFT, and the queues, sampled every 250 ms while requests are
// issued from the gateway's sluice_queue_depth (--metrics) and the
// upstreams' /stats "waiting" (--upstream-stats). --minutes prints it,
// as a scenario naming a reference does anyway.
//
// # Classification
//
// A unique request is judged by its last attempt:
//
//	OK        a complete 2xx answer (a stream up to [DONE] or
//	          message_stop) within patience
//	Late      the same, after patience (only when clients do not abandon)
//	Shed      503 or 529 with the gateway's overloaded_error body, or
//	          shed by the client's own throttle (strategy sluice)
//	RateLimited  429: the request's key is out of its budget
//	TimedOut  504 from the gateway, or the client gave up at patience
//	          or at the last attempt's own timeout (also: cut off by
//	          the end of the run's drain)
//	Lost      no response: connection refused, reset or closed before a
//	          status line, which is how a gateway that is down looks
//	Failed    anything else: other 4xx/5xx (a 413 for a request no
//	          budget could take), a 503 that is not a shed, an
//	          error event or a malformed event in a stream, a stream or
//	          body cut short, an answer not in the request's own
//	          dialect (an Anthropic message to an OpenAI client)
//
// An answer marked X-Sluice-Degraded (served by a model's degrade: under
// pressure) counts as degraded as well as ok or late.
//
// Latency and TTFT, for OK answers, run from the first attempt, as the user
// waited. TTFT is the first stream event carrying content, or the response
// headers when not streaming. Rejection latency is measured per shed
// attempt, from sending it to its answer; the report's refused_ms is
// that of the shed answers that never reached a provider (no
// X-Sluice-Attempts header), the rest having been answered early with
// their call already upstream. Peak counts HTTP exchanges open at once.
//
// # Bounds
//
// Issuing stops at the duration or after max-requests unique requests.
// Answers are then awaited for at most patience + 5 s (without patience,
// the model's gateway timeout + 5 s) and whatever is left is cancelled, so
// a run always ends.
package loadgen
