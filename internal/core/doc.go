// Package core is the root of Sluice's decision core: the pure packages
// below it (admission, limit, breaker, quota, pool, fleet, price, spend,
// evals, lifecycle) decide every request's fate from values the host
// passes in, and the pure models of the world under internal/model join
// them on the same terms. This package holds no code of its own, only
// the tests that keep both trees pure (purity_test.go) and the rest of
// the tree layered (layers_test.go).
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
//     clears it, calls a pointer method on it, takes its address), in
//     any function, init included, and declares none that holds a
//     pointer (a compiled regexp aside), a function or a channel: tables
//     initialised at their declaration and only read are fine, state
//     between calls lives in values the host holds. No host writes one
//     either (checked by syntax in every file outside the core);
//   - never takes the clock in: no struct field, parameter or variable
//     of type func() time.Time (under any name), and no call to one or
//     to such a method through an interface; no time.Timer or
//     time.Ticker or their methods, no time.LoadLocation,
//     LoadLocationFromTZData, time.Local or Time.Local, and no
//     time.Unix, UnixMilli or UnixMicro but followed by .UTC() or .In:
//     times and deadlines come in as values, in a zone the code names;
//   - never lets a map's iteration order reach what it returns: a range
//     over a map (or maps.Keys, Values, All of one) must not append to
//     a slice declared outside the loop unless the function sorts that
//     slice after it, return what the loop found, or assign a variable
//     declared outside from what it visits (integer sums and bitwise
//     combinations, min, max, "if v < x { x = v }" and writes into a
//     map by key are fine; a float sum is not, its rounding depends on
//     the order); range over the sorted keys instead. Otherwise the
//     runtime, not the seed, would pick what comes first.
//
// client/brake, the public client's retry budget and throttle, which
// the world models run too, is held to the same rules, and is the one
// package outside the core and the models that a model may import.
//
// The packages under internal/wire, the dialects' codecs, are held to
// part of this: they never read the clock, take a lock (sync's
// Once, OnceFunc, OnceValue and OnceValues aside, which build a value
// once for every caller as a declaration does), start a goroutine, dial,
// listen, serve or make an HTTP client or server of their own, or read
// the process (os), so a codec is a function of its bytes. The findings the tree has
// today are listed in purity_test.go (impure) with what removes each;
// an entry nothing matches any more fails the test.
//
// The test type-checks the core's packages (go/types, importing from
// source) so that these rules know a map from a slice and a package's
// variable from a local one. TestPurityCatchesPlants (plants_test.go)
// holds each rule to a planted file and the exact findings it must
// raise, one of them a codec file in internal/wire/gemini.
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
//	tests may), through any chain of imports; only cmd imports cli
//	client (the public Go client) ↛ internal
//
// The rules and the exceptions list, which only shrinks and is empty
// today, are in layers_test.go. TestLayersCatchPlants holds each rule to
// a planted import, and a linked rule to a planted chain, it must catch
// with the file and line.
package core
