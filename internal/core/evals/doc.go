// Package evals runs each model's fallback evals: a few config-declared
// prompts (models[].evals), each with a check on its answer (exact,
// contains, regex, JSON-schema valid, or a number within a tolerance),
// sent to every target of the model on a schedule, so that a fallback
// that is fast but wrong is known before an incident sends users to it
// (seed 004: "run a small eval against the fallback on a schedule so you
// are not meeting its quirks for the first time mid-incident").
//
// Goals: the calls are the gateway's own synthetic traffic, with their
// own small budget (MaxInFlight calls at once, CallsPerMinute a minute),
// never a client's key or budget, and never counted as client requests;
// targets and replicas do not run in step (jittered schedule); nothing
// runs when no model declares evals.
//
// Non-goals: measuring a target's availability (its breaker does that:
// a call that gets no answer is an error, not a failed check, and is
// left out of the pass rate), or grading answers with another model.
//
// # Organisation
//
// Core is the pure part, like lifecycle.Engine: it never reads the clock
// and starts no goroutine. Due hands out the calls whose runs are due,
// within the budget; Done takes each result; a run (every case against
// one target) is judged when its last call is done, and a target whose
// pass rate over its last Window runs falls below Threshold is degraded,
// and recovers once it is back at or above it (Transition, reported
// once each). The checks (Exact, Contains, Regex, Number, Schema) judge
// answers here too; a JSON schema is compiled by the host, which hands
// Schema its validator. The sets come from the config through
// policy.EvalSets. The gateway drives Core through
// internal/server/evalrunner (one goroutine on Core's next timer, one
// per call in flight, all stopped by Close); the simulator steps Core on
// its virtual clock.
//
// A degraded target is an input to the request lifecycle
// (lifecycle.Engine.SetEvalDegraded): failover passes over it while a
// target that is not degraded can serve, so the gateway and the
// simulator route around it with the same code.
package evals
