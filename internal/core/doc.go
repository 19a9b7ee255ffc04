// Package core is the root of Sluice's decision core: the pure packages
// below it (admission, limit, breaker, quota, pool, evals, lifecycle)
// decide every request's fate from values the host passes in, and the
// pure models of the world under internal/model join them on the same
// terms. This package holds no code of its own, only the test that keeps
// both trees pure and the rest of the tree layered (purity_test.go).
//
// # What "pure" means here
//
// A package under internal/core or internal/model, in its non-test
// files:
//
//   - imports only the standard library packages in the test's allow
//     list (values, text, arithmetic, containers, seeded randomness,
//     time as a value type) and other core or model packages (a model
//     package imports only models): never net, os, io, context, sync,
//     reflect, a YAML or Prometheus library, internal/config,
//     internal/wire or a host (internal/server, internal/sim,
//     internal/harness, internal/cli);
//   - never reads the clock (time.Now, Since, Until, After, Sleep,
//     NewTimer, NewTicker, Tick, AfterFunc): the host passes now in;
//   - never starts a goroutine, declares a channel, sends, receives or
//     selects: the host owns concurrency;
//   - never takes a lock (sync, sync/atomic): the host serialises calls;
//   - never draws from a global random source (math/rand/v2's top-level
//     functions): every draw comes from a source seeded by the caller,
//     so a seed replays a run exactly;
//   - never prints (fmt.Print*, Fprint*, Scan*): what the core knows,
//     it returns;
//   - never writes a package-level variable (assigns it or through an
//     index, field or pointer of it, appends into it, deletes from or
//     clears it, calls a pointer method on it), in any function, init
//     included: tables initialised at their declaration and only read
//     are fine, state between calls lives in values the host holds;
//   - never takes the clock in: no struct field or parameter of type
//     func() time.Time (under any name), no time.Timer or time.Ticker,
//     no time.LoadLocation, LoadLocationFromTZData, time.Local or
//     Time.Local: times and deadlines come in as values;
//   - never builds a slice in a map's iteration order: a range over a
//     map (or maps.Keys, Values, All of one) whose body appends to a
//     slice declared outside the loop must be followed, in the same
//     function, by a sort.* or slices.Sort* of that slice, or range
//     over the sorted keys instead; otherwise the runtime, not the
//     seed, would pick what comes first.
//
// The packages under internal/wire, the dialects' codecs, are held to
// part of this: they never read the clock, take a lock (sync's
// Once, OnceFunc, OnceValue and OnceValues aside, which build a value
// once for every caller as a declaration does) or start a goroutine,
// so a codec is a function of its bytes. The findings the tree has
// today are listed in purity_test.go (impure) with what removes each;
// an entry nothing matches any more fails the test.
//
// The test type-checks the core's packages (go/types, importing from
// source) so that these rules know a map from a slice and a package's
// variable from a local one. TestPurityCatchesPlants holds each rule to
// a planted file and the exact findings it must raise.
//
// This is what lets the gateway (internal/server/runner, on the wall
// clock) and the simulator (internal/sim, on a virtual one) drive the
// same code and get the same decisions.
//
// # Layering of the rest of the tree
//
// The same test reads every package's imports and holds the layers:
//
//	cmd → cli → {server, sim, harness} → policy → {core, model, config, wire}
//	policy imports only core, model, config and wire
//	config imports only wire (JSON-schema checks of eval cases) and model
//	(the upstream behaviour a script file describes)
//	wire imports only wire
//	server ↛ sim, sim ↛ server, sim ↛ harness, server ↛ harness (its
//	tests may), only cmd imports cli
//	client (the public Go client) ↛ internal, but for the exceptions
//	purity_test.go lists with what removes each
//
// TestLayersCatchPlants holds each rule to a planted import it must
// catch.
package core
