// Package evalrunner is the concurrent shell the gateway puts around the
// pure evals.Core: one goroutine that waits for the Core's next timer
// and hands out the eval calls that are due, and one goroutine per call
// in flight (at most the Core's MaxInFlight), all stopped by Close.
//
// Every decision (when a run is due, the call budget, the pass rate, a
// target's degradation) is the Core's; the simulator steps the same Core
// on its virtual clock. It is a package of its own, beside
// internal/server/runner, because its names (Runner, Caller, Hooks)
// would collide with the request Runner's, and the two share no code.
package evalrunner
