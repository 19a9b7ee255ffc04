package mock

import (
	"context"
	"errors"
	"sync"
)

// errQueueFull is the vLLM-style refusal when both the running batch and
// the waiting queue are full.
var errQueueFull = errors.New("mock: queue full")

// scheduler models an inference server's admission: up to maxRunning
// sequences generate at once, the rest wait in FIFO order, and beyond
// maxWaiting new work is refused. It also counts running sequences when
// unlimited, because the batch size drives the per-token slowdown.
type scheduler struct {
	maxRunning int // 0 = unlimited
	maxWaiting int // 0 = unlimited, -1 = none

	mu      sync.Mutex
	running int
	queue   []*waiter
}

type waiter struct {
	ready   chan struct{}
	granted bool // set under mu when a slot is handed over
}

// acquire blocks until the call may run, the queue is full, or ctx ends.
func (s *scheduler) acquire(ctx context.Context) error {
	s.mu.Lock()
	if s.maxRunning == 0 || (s.running < s.maxRunning && len(s.queue) == 0) {
		s.running++
		s.mu.Unlock()
		return nil
	}
	if s.maxWaiting < 0 || (s.maxWaiting > 0 && len(s.queue) >= s.maxWaiting) {
		s.mu.Unlock()
		return errQueueFull
	}
	w := &waiter{ready: make(chan struct{})}
	s.queue = append(s.queue, w)
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
		s.releaseLocked()
	} else {
		for i, q := range s.queue {
			if q == w {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				break
			}
		}
	}
	return ctx.Err()
}

func (s *scheduler) release() {
	s.mu.Lock()
	s.releaseLocked()
	s.mu.Unlock()
}

// releaseLocked hands the slot straight to the oldest waiter, so running
// never dips and a newcomer cannot jump the queue.
func (s *scheduler) releaseLocked() {
	if len(s.queue) > 0 {
		w := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		w.granted = true
		close(w.ready)
		return
	}
	s.running--
}

func (s *scheduler) counts() (running, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, len(s.queue)
}
