// Package admission decides whether a request may start now, must wait, or
// is refused, and it refuses early and cheaply.
//
// # Goals
//
//   - Bound the work in flight: a global concurrency limit and one per scope
//     (a provider), so a slow upstream fills a bounded number of slots rather
//     than the process's memory (Little's Law: L = λW, and W is the
//     provider's to choose).
//   - Bound the waiting room by depth and by age. A waiter whose wait runs
//     out is refused at that moment, not when it reaches the head.
//   - Shed by priority. critical is never shed to make room for another
//     class: it has Reserved slots above the limit and Reserved queue
//     places, waits at the head of the queue, and when the queue is full
//     it displaces the newest waiter of a lower class. It is bounded only
//     against itself: its waiters count against MaxDepth and MaxQueued,
//     and wait at most MaxWait like everyone else's, so a flood of
//     critical requests (a misbehaving service holding a critical key)
//     fills a bounded queue, not the process's memory. background is shed
//     before interactive: it is granted last, and a newcomer of a higher
//     class displaces the newest waiter of the lowest class when the
//     queue is full.
//   - Say when to come back. DrainTime is the expected time until a
//     newcomer would start, read at that moment from the ages of the
//     slots in flight against the durations of recent calls (hint.go),
//     so it holds at the start of a burst, after a quiet spell and while
//     every slot is held by calls longer than any seen; RetryAfter
//     spreads it by seeded jitter so that clients refused together do
//     not return together.
//
// # Non-goals
//
// Rate limits per client key, token budgets and the choice of limit value
// live elsewhere; this package reads the limit through the Limiter
// interface, so an adaptive algorithm can move it.
//
// # Organisation
//
// Core is the decision state machine. It is not safe for concurrent use, it
// never reads the clock (every method takes now), starts no goroutines and
// does no I/O. Its methods return what happened as values: tickets granted,
// waiters refused.
//
// This package has no concurrent shell of its own: one admission decision
// is only part of a request's life, so Core is driven by lifecycle.Engine,
// which adds what follows (slow calls, deadlines, samples for adaptive
// limits). The concurrent shell the gateway uses is runner.Runner: one
// mutex, one timer, one channel per waiter, turning Core's values into
// wake-ups. Its refusals are *Rejection errors, which match ErrRejected,
// so the gateway answers 503/529 with RetryAfter.
//
// # Usage
//
//	c := admission.NewCore(admission.Config{...})
//	res := c.Admit(now, admission.Request{Priority: admission.Interactive, Scope: 1})
//	// Admitted: start, and Release(now, res.Ticket) exactly once.
//	// Queued: wait for the ticket in a later Release, Pump or Expire.
//	// Rejected: answer with res.Refusal.RetryAfter.
package admission
