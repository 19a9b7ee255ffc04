package mock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/model/workload"
)

// errQueueFull is the vLLM-style refusal when both the running batch and
// the waiting queue are full.
var errQueueFull = errors.New("mock: queue full")

// scheduler is the concurrent shell around workload.Capacity, the
// capacity model the simulator runs too: a mutex, and a channel per
// waiting call that closes when the call is handed a slot.
type scheduler struct {
	mu       sync.Mutex
	capacity *workload.Capacity[*waiter]
}

type waiter struct {
	ready   chan struct{}
	granted bool // set under mu when a slot is handed over
}

func newScheduler(cfg Config) *scheduler {
	return &scheduler{capacity: workload.NewCapacity[*waiter](cfg.MaxRunning, cfg.MaxWaiting, cfg.BatchSlowdown)}
}

// acquire blocks until the call may run, the queue is full, or ctx ends.
func (s *scheduler) acquire(ctx context.Context) error {
	w := &waiter{}
	s.mu.Lock()
	switch s.capacity.Admit(w) {
	case workload.Run:
		s.mu.Unlock()
		return nil
	case workload.Refuse:
		s.mu.Unlock()
		return errQueueFull
	}
	w.ready = make(chan struct{}) // only waiters need one; made before anyone can grant it
	s.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted {
		// The slot arrived as we gave up: pass it on rather than leak it.
		s.endLocked()
	} else {
		s.capacity.Withdraw(w)
	}
	return ctx.Err()
}

func (s *scheduler) release() {
	s.mu.Lock()
	s.endLocked()
	s.mu.Unlock()
}

// endLocked frees a running call's slot; the model hands it straight to
// the oldest waiter, which is woken here.
func (s *scheduler) endLocked() {
	if w, ok := s.capacity.End(); ok {
		w.granted = true
		close(w.ready)
	}
}

// tpot is the time per output token with the batch as it stands now.
func (s *scheduler) tpot(tpot time.Duration, scale float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capacity.TPOT(tpot, scale)
}

func (s *scheduler) counts() (running, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capacity.Running(), s.capacity.Waiting()
}
