package main

import (
	"context"
	"os"
	"time"
)

// fleet is every target of a phase running at once, idle except the one
// under load. Load phases measure in interleaved rounds (each target in
// turn, several times) so that drift in the machine's other load hits all
// targets alike rather than whichever happened to run at the bad moment.
type fleet struct {
	kinds   []kind
	targets []*target // nil where the target is skipped or failed
	notes   []string  // why, per target
}

// startFleet starts every available kind; profile gives each its upstream.
func (e *env) startFleet(ctx context.Context, kinds []kind, profile func(kind) mockProfile, l limits) *fleet {
	f := &fleet{kinds: kinds, targets: make([]*target, len(kinds)), notes: make([]string, len(kinds))}
	for i, k := range kinds {
		if ctx.Err() != nil {
			f.notes[i] = "interrupted"
			continue
		}
		if !e.available(k) {
			f.notes[i] = "skipped: not available"
			continue
		}
		t, err := e.start(ctx, k, profile(k), l)
		if err != nil {
			f.notes[i] = "failed to start: " + err.Error()
			e.logf("  %s %s", k, f.notes[i])
			continue
		}
		f.targets[i] = t
	}
	return f
}

// same gives every target the same upstream behaviour.
func same(p mockProfile) func(kind) mockProfile { return func(kind) mockProfile { return p } }

func (f *fleet) stop() {
	for _, t := range f.targets {
		if t != nil {
			t.stop()
		}
	}
}

// sliceOf splits a phase's measured time into rounds.
func sliceOf(total time.Duration, rounds int) time.Duration {
	return total / time.Duration(max(1, rounds))
}

// cpuSnap is the CPU time used so far by the processes of one target
// measurement, and by the whole machine.
type cpuSnap struct {
	proxy, mock, gen, system time.Duration
}

func takeCPU(t *target) cpuSnap {
	var s cpuSnap
	s.proxy, _ = cpuTime(t.proc.PID)
	s.mock, _ = cpuTime(t.mock.proc.PID)
	s.gen, _ = cpuTime(os.Getpid())
	s.system, _ = systemBusy()
	return s
}

// cpuUse accumulates CPU deltas over several measured slices.
type cpuUse struct {
	proxy, mock, gen, other time.Duration
}

func (u *cpuUse) add(t *target, a, b cpuSnap) {
	u.proxy += b.proxy - a.proxy
	u.gen += b.gen - a.gen
	ours := b.proxy - a.proxy + b.gen - a.gen
	if t.proc != t.mock.proc { // for direct, the proxy is the mock
		u.mock += b.mock - a.mock
		ours += b.mock - a.mock
	} else {
		u.mock += b.proxy - a.proxy
	}
	u.other += max(0, b.system-a.system-ours)
}

// settle waits (up to limit) until the target's proxy has stopped using
// CPU, so that work it still does for abandoned or timed-out requests of
// one slice (a proxy that does not cancel keeps going) does not run
// during the next target's slice.
func settle(ctx context.Context, t *target, limit time.Duration) {
	const step, idle = 200 * time.Millisecond, 10 * time.Millisecond // 5% of a core
	deadline := time.Now().Add(limit)
	last, err := cpuTime(t.proc.PID)
	for err == nil && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(step)
		var now time.Duration
		if now, err = cpuTime(t.proc.PID); err == nil && now-last < idle {
			return
		}
		last = now
	}
}

// warmClients gives each started target of the fleet a client with conns
// connections, runs warmup through it, and lets the target settle. It
// returns the clients (nil where a target did not start) and a function
// that closes them all.
func (f *fleet) warmClients(ctx context.Context, conns int, warmup func(c *client)) ([]*client, func()) {
	clients := make([]*client, len(f.targets))
	for i, t := range f.targets {
		if t == nil {
			continue
		}
		clients[i] = newClient(t, chatBody(false, 0), conns)
		warmup(clients[i])
		settle(ctx, t, 30*time.Second)
	}
	return clients, func() {
		for _, c := range clients {
			if c != nil {
				c.close()
			}
		}
	}
}

// newTallies makes one tally per target.
func newTallies(n int) []*tally {
	out := make([]*tally, n)
	for i := range out {
		out[i] = newTally()
	}
	return out
}
