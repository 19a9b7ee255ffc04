package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrRejected is the sentinel every *Rejection matches with errors.Is.
var ErrRejected = errors.New("admission: rejected")

// Rejection is the error Acquire returns when a request is refused.
type Rejection struct {
	Reason     Reason
	Priority   Priority
	RetryAfter time.Duration
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("admission: rejected %s request: %s (retry after %s)", r.Priority, r.Reason, r.RetryAfter)
}

// Is makes errors.Is(err, ErrRejected) true for every Rejection.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

// Gate is the concurrent shell around Core: it blocks waiters, wakes them
// when Core grants or refuses them, and fires Core's expiries on a timer.
// All its methods are safe for concurrent use.
type Gate struct {
	now func() time.Time

	mu      sync.Mutex // guards everything below
	core    *Core
	waiters map[Ticket]chan error // buffered(1): nil means granted
	timer   *time.Timer
	timerAt time.Time
}

// NewGate wraps a new Core. now is the clock; nil means time.Now.
func NewGate(cfg Config, now func() time.Time) *Gate {
	if now == nil {
		now = time.Now
	}
	return &Gate{now: now, core: NewCore(cfg), waiters: make(map[Ticket]chan error)}
}

// Permit is an admitted request's slot.
type Permit struct {
	g        *Gate
	ticket   Ticket
	released atomic.Bool
	// Waited is how long the request spent in the queue.
	Waited time.Duration
}

// Release returns the slot. It is safe to call more than once, from any
// goroutine; only the first call has an effect.
func (p *Permit) Release() {
	if p == nil || !p.released.CompareAndSwap(false, true) {
		return
	}
	g := p.g
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	granted, _ := g.core.Release(now, p.ticket)
	g.grantLocked(granted)
	g.armLocked(now)
}

// Check reports, without taking a slot, whether a request would be refused
// at once if it arrived now (see Core.Check). It returns nil if not.
func (g *Gate) Check(r Request) *Rejection {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, refused := g.core.Check(g.now(), r); refused {
		return &Rejection{Reason: f.Reason, Priority: f.Priority, RetryAfter: f.RetryAfter}
	}
	return nil
}

// Acquire admits r, waiting in the queue if Core says so, until granted,
// refused, or ctx is done. On success the caller must Release the permit.
// On refusal the error is a *Rejection; if ctx ends first, ctx's error.
func (g *Gate) Acquire(ctx context.Context, r Request) (*Permit, error) {
	g.mu.Lock()
	now := g.now()
	res := g.core.Admit(now, r)
	g.refuseLocked(res.Displaced)
	switch res.Verdict {
	case Admitted:
		g.mu.Unlock()
		return &Permit{g: g, ticket: res.Ticket}, nil
	case Rejected:
		g.mu.Unlock()
		f := res.Refusal
		return nil, &Rejection{Reason: f.Reason, Priority: f.Priority, RetryAfter: f.RetryAfter}
	}
	ch := make(chan error, 1)
	g.waiters[res.Ticket] = ch
	g.armLocked(now)
	g.mu.Unlock()

	select {
	case err := <-ch:
		if err != nil {
			return nil, err
		}
		return &Permit{g: g, ticket: res.Ticket, Waited: g.now().Sub(now)}, nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	left := g.core.Leave(g.now(), res.Ticket)
	if left {
		delete(g.waiters, res.Ticket)
		g.armLocked(g.now())
	}
	g.mu.Unlock()
	if !left {
		// Core settled us between ctx ending and the lock: if it granted
		// a slot, hand it straight back.
		if err := <-ch; err == nil {
			(&Permit{g: g, ticket: res.Ticket}).Release()
		}
	}
	return nil, ctx.Err()
}

func (g *Gate) grantLocked(ts []Ticket) {
	for _, t := range ts {
		if ch, ok := g.waiters[t]; ok {
			delete(g.waiters, t)
			ch <- nil
		}
	}
}

func (g *Gate) refuseLocked(fs []Refusal) {
	for _, f := range fs {
		if ch, ok := g.waiters[f.Ticket]; ok {
			delete(g.waiters, f.Ticket)
			ch <- &Rejection{Reason: f.Reason, Priority: f.Priority, RetryAfter: f.RetryAfter}
		}
	}
}

// armLocked points the one timer at Core's next expiry.
func (g *Gate) armLocked(now time.Time) {
	at, ok := g.core.NextExpiry()
	if !ok || (g.timer != nil && at.Equal(g.timerAt)) {
		return
	}
	g.timerAt = at
	d := at.Sub(now)
	if g.timer == nil {
		g.timer = time.AfterFunc(d, g.expire)
		return
	}
	g.timer.Reset(d)
}

func (g *Gate) expire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.refuseLocked(g.core.Expire(now))
	g.timerAt = time.Time{}
	g.armLocked(now)
}

// Pump starts waiters that fit after a limit was raised.
func (g *Gate) Pump() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.grantLocked(g.core.Pump(g.now()))
}

// Snapshot reports Core's state.
func (g *Gate) Snapshot() Snapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.core.Snapshot(g.now())
}
