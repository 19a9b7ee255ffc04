// Package runner is the concurrent shell the gateway puts around the
// pure request lifecycle (lifecycle.Engine): it turns the Engine's
// values into waiting, waking and cancelling on the wall clock.
//
// # Goals
//
// Many request handlers call in at once; the Engine is a single-threaded
// state machine that never reads the clock. Runner serialises every call
// into it with one mutex, reads the clock once per call (now, passed
// in), arms one time.Timer at the Engine's NextTimer and calls Tick when
// it fires, and carries out each Ready: it wakes a queued request's
// Acquire through its own channel, cancels the context of a call the
// Engine expired or answered early, hands a hedge or rescue to its
// request (Call.Seconds), and sends synthetic probes on their own
// goroutines through the host's prober.
//
// # Non-goals
//
// Deciding anything. Every rule lives in the Engine, and Runner uses only
// its exported API, as the simulator does (internal/sim drives the same
// Engine on a virtual clock, arming the same NextTimer). A rule found
// here would be one the simulator cannot show.
//
// # Organisation
//
//   - runner.go: Runner (NewRunner, Acquire, Check, Close and the
//     Engine's read-outs under the lock) and Call, an admitted request's
//     hold on its slot (Finish, FirstByte, Commit, Retry, End);
//   - fleet.go: what a fleet of replicas feeds in (Adopt, evidence).
//
// Package internal/server/evalrunner is the same kind of shell around
// evals.Core; it is a package of its own because its names (Runner,
// Caller, Hooks) would collide with these, and the two share no code.
//
// # Usage
//
//	ec, err := policy.FromConfig(cfg)
//	r := runner.NewRunner(ec, nil) // nil: time.Now
//	defer r.Close()
//	call, err := r.Acquire(ctx, req) // waits in the queue if need be
//	if err != nil { /* an *admission.Rejection, or ctx's error */ }
//	defer call.Finish(lifecycle.Outcome{Kind: lifecycle.Cancelled})
//	// send upstream with call.Context(); then:
//	call.Finish(lifecycle.StatusOutcome(status, retryAfter))
package runner
