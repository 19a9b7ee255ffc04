// Package policy turns a validated configuration (internal/config) into
// the values the pure core takes: the request lifecycle's Config
// (FromConfig: one scope per provider with its limit, breaker or replica
// pool; one route per model; admission, lanes, hedging, retries and
// token budgets), a key's budget (Limits), and the models' eval sets
// with their checks (EvalSets, EvalCheck).
//
// # Goals
//
// One reading of the config for every host. The gateway
// (internal/server/gateway) and the simulator (internal/sim) both build
// their engines and eval sets here, so they cannot disagree about what a
// config means; and the core under internal/core never sees the YAML
// schema, which keeps it free of the config's dependencies (YAML,
// JSON-schema, validation) and lets internal/core's purity test hold.
//
// # Non-goals
//
// Validation and defaults: config.Parse and config.Validate have done
// them, so the errors here are for a configuration built in code. Time
// scaling of the file's own durations (config.Config.Scaled): FromConfig
// only passes the scale on to the engine, the breakers and the limits,
// which scale the defaults that live in code.
//
// # Organisation
//
//   - fromconfig.go: FromConfig, Limits, and the per-provider scope,
//     breaker and pool they build;
//   - evals.go: EvalSets and EvalCheck; a JSON-schema check is compiled
//     here (internal/wire/contract) and handed to evals.Schema as its
//     validator.
package policy
