package limit

import "time"

// Sample is one observation of a call, fed to an Algorithm when the call
// completes, fails, or is flagged slow while still in flight.
type Sample struct {
	// Now is when the sample is recorded (the clock is always passed in).
	Now time.Time
	// Latency is the latency signal the limiter is configured to use:
	// time to first token, time per output token, or end-to-end time.
	// It is meaningless when Dropped is set and must then be ignored:
	// a fast failure is not a low RTT.
	Latency time.Duration
	// InFlight is how many calls are in flight in this limiter's scope
	// as the sample is taken, the sampled call included: the load the
	// call actually shared. (Netflix passes the count when the call
	// started.) When several calls end at one instant, as a tick
	// simulation settles a whole tick, each carries the count from
	// before the first of them ended: seed 000's passes every completion
	// in a tick the count from before that tick's settlement.
	InFlight int
	// Dropped marks an overload signal: upstream 429/529, a timeout, a
	// connection error, or a call flagged slow while still in flight.
	Dropped bool
	// QueueWait is how long the call waited for admission; windowed
	// algorithms treat a long queue age as overload.
	QueueWait time.Duration
}

// Algorithm computes a concurrency limit from samples. Implementations
// are not safe for concurrent use, never read the clock, and start no
// goroutines: the host serialises calls and passes time in.
type Algorithm interface {
	// Limit is the current limit, at least 1.
	Limit() int
	// Update feeds one sample.
	Update(s Sample)
}
