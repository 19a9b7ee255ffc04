// Package gateway is the HTTP shell around Sluice's decisions: it
// classifies a request from its headers, has the lifecycle engine screen
// and admit it (through internal/server/runner), relays the call to the
// provider, streams the answer back event by event, and reports what
// happened to metrics and the request log.
//
// The decisions themselves live in the pure core (internal/core, above
// all lifecycle.Engine, which the runner drives on the wall clock); this
// package only carries them out with the real clock and real sockets.
//
// The request path, in order:
//
//  1. route: the path picks the endpoint and its dialect (OpenAI or Anthropic);
//  2. classify: priority and timeout from X-Sluice-Priority and
//     X-Sluice-Timeout (or the SDKs' X-Stainless-Timeout);
//  3. early shed: if the global limit and the queue leave no room for this
//     priority (Runner.Check), answer 503/529 now, before reading the
//     body (unless its Idempotency-Key's answer is already being made
//     here: sharing it takes no room);
//  4. read and scan the body (bounded by max_body_bytes, and in shape by
//     server.max_messages and .max_json_depth), resolve the model to its
//     first target; a request with an Idempotency-Key may now share a
//     generation in flight, or replay a stored answer, instead
//     (idempotency.go); and a chat request of a model or key with the
//     response cache on may be answered from a stored complete answer,
//     or has its answer recorded for it (cache.go);
//  5. the request stages (stages.go, one ordered table, requestStages),
//     cheapest refusal first (lifecycle/screen.go): the key's budgets at
//     the request's floor (Runner.Screen), then its tokens counted, a
//     longer-context model or a degraded one chosen, the budgets again
//     with the count, its structured output compiled, the fleet's
//     shared budget taken and its spend reserved, and only then each
//     target's adapter readied (adapter.go: translated for a target of
//     the other API, coded for a native one; the targets that cannot
//     take it left out by lifecycle.Route.Eligible); last, Runner.Acquire,
//     where the engine admits it to a slot in the global and provider
//     limits under its deadline, or refuses it with an honest
//     Retry-After. What a stage took, its end releases on every path;
//  6. upstream: the provider's key replaces the client's credentials
//     (an Azure OpenAI provider's in api-key, its target model in the
//     deployment URL: callURL), model is rewritten, the deadline rides
//     on the request's context;
//     the target's adapter gives the call's path, body and transport
//     context: the client's own API, translated (package translate) on
//     the other API's path, or a native codec's (native.go);
//     a Responses API request is passed through when every target
//     serves the API (responses.go), and otherwise bridged: served as a
//     chat request, its answer put back in the API's shape on the way
//     out (responses_bridge.go);
//  7. relay: SSE is flushed as it arrives, whole events at a time, by one
//     stream relay whose concerns (usage, idle watch, translation, stream
//     check, validation, scrubbing) are a chain of filters
//     (relay_filter.go); other bodies are checked to be
//     well-formed JSON before the client sees them; every answer is cut
//     at the request's output limit, whatever its provider sent
//     (relay_cap.go); a translated answer,
//     error or stream (event by event) comes back in the client's API;
//     an answer to a request that declared structured output is checked
//     against it, and annotated, retried or refused (validation.go).
//
// Every admitted request releases its slot exactly once (the acquire
// stage's end, an idempotent Call.Finish), and every client gets exactly one well-formed
// answer: a success, or an error in its API's own shape.
//
// Every upstream call a request makes (its first, a retry, a hedge and
// the race's loser, a continuation) is recorded once, as one record
// priced once (ledger.go); the call's spend settlement, the usage
// records, sluice_tokens_total and sluice_cost_total, and the request's
// log line all read those records, so they agree.
//
// Beside the request path, each side concern is a component of its own,
// built by New and holding only what it needs (never the Gateway): the
// keyring (keys.go, runtimekeys.go: who may call, and whether a key is
// required), the prober and the scrapers (probe.go, pool.go: the
// breakers' probes, the pools' replica metrics), the evaluator
// (evals.go: the fallback evals and /admin/evals), tracing (tracing.go,
// nil with tracing off), the fleet's verdicts and probe leases
// (fleet.go, nil outside a fleet), idemState (idempotency.go, nil with
// idempotency off), the response cache (cache.go) and the usageBook
// (usage.go). A component that
// answers a client does so through the exchange (x.fail).
package gateway
