package workload

import (
	"slices"
	"time"
)

// Admission is what an upstream does with a call it is handed.
type Admission uint8

const (
	Run    Admission = iota // generates from now
	Wait                    // queued behind the calls already waiting
	Refuse                  // both the batch and the queue are full: 503 (529 on Anthropic's API)
)

func (a Admission) String() string {
	switch a {
	case Run:
		return "run"
	case Wait:
		return "wait"
	}
	return "refuse"
}

// Capacity is a vLLM-like inference server's admission: at most
// maxRunning calls generate at once, the rest wait in FIFO order, and
// past maxWaiting waiting calls new ones are refused. The number
// generating also sets the per-token time, because a bigger batch
// decodes each sequence more slowly.
//
// C identifies a call (the mock's waiter, the simulator's call); only
// waiting calls are kept, so a call that runs at once is never stored.
// Capacity is pure and not safe for concurrent use: the mock wraps it in
// a mutex with a channel per waiter, the simulator calls it from its
// event loop.
type Capacity[C comparable] struct {
	maxRunning    int // 0: unlimited
	maxWaiting    int // 0: unlimited, -1: no queue at all
	batchSlowdown float64
	running       int
	waiting       []C // oldest first
}

// NewCapacity returns an idle upstream. maxRunning 0 is unlimited;
// maxWaiting 0 is unlimited and -1 refuses every call that cannot run at
// once. batchSlowdown is the fraction by which each running call beyond
// the first stretches the per-token time.
func NewCapacity[C comparable](maxRunning, maxWaiting int, batchSlowdown float64) *Capacity[C] {
	return &Capacity[C]{maxRunning: maxRunning, maxWaiting: maxWaiting, batchSlowdown: batchSlowdown}
}

// Admit hands the upstream a new call. A call runs only when a slot is
// free and nobody waits, so a newcomer never jumps the queue.
func (c *Capacity[C]) Admit(call C) Admission {
	switch {
	case c.maxRunning == 0 || (c.running < c.maxRunning && len(c.waiting) == 0):
		c.running++
		return Run
	case c.maxWaiting < 0 || (c.maxWaiting > 0 && len(c.waiting) >= c.maxWaiting):
		return Refuse
	}
	c.waiting = append(c.waiting, call)
	return Wait
}

// End frees the slot of a running call that finished, failed or was
// cancelled. The slot goes straight to the oldest waiting call, which
// runs from now (next, true), so the running count never dips while
// calls wait.
//
// REQUIRES: a call admitted with Run, or handed a slot by End, that has
// not ended yet.
func (c *Capacity[C]) End() (next C, ok bool) {
	if len(c.waiting) == 0 {
		c.running--
		return next, false
	}
	next = c.waiting[0]
	var zero C
	c.waiting[0] = zero // let it be collected
	c.waiting = c.waiting[1:]
	return next, true
}

// Withdraw takes a waiting call out of the queue: its client gave up. It
// reports false if the call was not waiting, in which case it is running
// (End frees its slot) or was never admitted.
func (c *Capacity[C]) Withdraw(call C) bool {
	i := slices.Index(c.waiting, call)
	if i < 0 {
		return false
	}
	c.waiting = slices.Delete(c.waiting, i, i+1)
	return true
}

// Running is the number of calls generating now.
func (c *Capacity[C]) Running() int { return c.running }

// Waiting is the number of calls queued now.
func (c *Capacity[C]) Waiting() int { return len(c.waiting) }

// TPOT is the time per output token now: tpot × scale (a brownout's
// multiplier) × (1 + batch_slowdown × (running − 1)). The mock re-reads
// it for every token; the simulator reads it once, when a call starts.
func (c *Capacity[C]) TPOT(tpot time.Duration, scale float64) time.Duration {
	slow := 1 + c.batchSlowdown*float64(max(c.running-1, 0))
	return time.Duration(float64(tpot) * scale * slow)
}
