package scenario

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Fleet runs the gateway as several replicas behind one load balancer,
// each with its own decision engine. Whether they share is the policy's
// gateway config's to say, as for sluice serve: with store: set (any
// redis:// URL; the simulator never connects) the replicas share key
// budgets, split fixed concurrency limits, adopt each other's breaker
// verdicts and let one of them probe; without it each decides alone.
type Fleet struct {
	// Replicas is the number of gateway processes (default 1: no fleet).
	Replicas int `yaml:"replicas"`
	// Balance is how the load balancer spreads requests (each attempt,
	// retries included): "round_robin" (default) or "random".
	Balance string `yaml:"balance"`
	// Store models the shared store.
	Store FleetStore `yaml:"store"`
	// Join lists replicas that start mid-run: each learns the fleet
	// from the store before it serves, as the gateway's do (it reports
	// ready only once it has joined), and the others count it at their
	// next heartbeat.
	Join []Change `yaml:"join"`
	// Leave lists replicas that stop mid-run, the latest to have joined
	// first: the load balancer sends them nothing more, the calls they
	// hold run to their end, and they stop heartbeating, so the others
	// count them out once their heartbeat is older than the liveness
	// window (3 heartbeats).
	Leave []Change `yaml:"leave"`
	// Heartbeat is the interval between a replica's heartbeats into the
	// store (default 1s, the gateway's): a replica is live while its
	// last heartbeat is within 3 intervals.
	Heartbeat time.Duration `yaml:"heartbeat"`
}

// Change is a step in the fleet's size: Replicas processes start
// (fleet.join) or stop (fleet.leave) at At.
type Change struct {
	At       time.Duration `yaml:"at"`
	Replicas int           `yaml:"replicas"`
}

// FleetStore is the shared store as the simulator models it.
type FleetStore struct {
	// Latency is the one-way delay before a breaker verdict reaches the
	// other replicas (default 1ms).
	Latency time.Duration `yaml:"latency"`
	// Down lists windows when the store is unreachable: each replica then
	// decides alone, with its share of every key budget.
	Down []Window `yaml:"down"`
}

// Window is a span of simulated time, [Start, End).
type Window struct {
	Start time.Duration `yaml:"start"`
	End   time.Duration `yaml:"end"`
}

// Balance names.
const (
	RoundRobin = "round_robin"
	Random     = "random"
)

// DefaultStoreLatency is the store's one-way delay when none is given.
const DefaultStoreLatency = time.Millisecond

// DefaultHeartbeat is the heartbeat interval when none is given: the
// gateway's (fleetstore.MemberOptions.Interval's default).
const DefaultHeartbeat = time.Second

// Size is the number of replicas at the start: at least 1.
func (f Fleet) Size() int { return max(1, f.Replicas) }

// Slots is the number of replica processes the run ever has: those at
// the start and every one that joins.
func (f Fleet) Slots() int {
	n := f.Size()
	for _, j := range f.Join {
		n += j.Replicas
	}
	return n
}

// Changes reports whether replicas join or leave mid-run.
func (f Fleet) Changes() bool { return len(f.Join)+len(f.Leave) > 0 }

// HeartbeatEvery is Heartbeat or its default.
func (f Fleet) HeartbeatEvery() time.Duration {
	if f.Heartbeat > 0 {
		return f.Heartbeat
	}
	return DefaultHeartbeat
}

// StoreLatency is Store.Latency or its default.
func (f Fleet) StoreLatency() time.Duration {
	if f.Store.Latency > 0 {
		return f.Store.Latency
	}
	return DefaultStoreLatency
}

// StoreUp reports whether the store answers at t.
func (f Fleet) StoreUp(t time.Duration) bool {
	for _, w := range f.Store.Down {
		if t >= w.Start && t < w.End {
			return false
		}
	}
	return true
}

func (f Fleet) validate(duration time.Duration, bad func(string, ...any)) {
	if f.Replicas < 0 {
		bad("fleet.replicas: %d; give a positive number of replicas (1 is no fleet)", f.Replicas)
	}
	switch f.Balance {
	case "", RoundRobin, Random:
	default:
		bad("fleet.balance: %q; use %s or %s", f.Balance, RoundRobin, Random)
	}
	if f.Store.Latency < 0 {
		bad("fleet.store.latency: must not be negative")
	}
	if f.Store.Latency >= duration && duration > 0 {
		bad("fleet.store.latency: %v is not shorter than the scenario's duration", f.Store.Latency)
	}
	for i, w := range f.Store.Down {
		if w.Start < 0 || w.End <= w.Start {
			bad("fleet.store.down[%d]: need 0 <= start < end, got start %v, end %v", i, w.Start, w.End)
		}
	}
	if f.Heartbeat < 0 {
		bad("fleet.heartbeat: %v; give a positive interval (default %v)", f.Heartbeat, DefaultHeartbeat)
	}
	f.validateChanges(duration, bad)
}

// validateChanges checks fleet.join and fleet.leave: each within the
// run, of at least one replica, and never leaving the fleet empty.
func (f Fleet) validateChanges(duration time.Duration, bad func(string, ...any)) {
	type step struct {
		at    time.Duration
		delta int
		name  string
	}
	var steps []step
	for _, c := range []struct {
		name string
		list []Change
		sign int
	}{{"fleet.join", f.Join, 1}, {"fleet.leave", f.Leave, -1}} {
		for i, ch := range c.list {
			name := fmt.Sprintf("%s[%d]", c.name, i)
			switch {
			case ch.Replicas < 1:
				bad("%s: replicas %d; give how many replicas (at least 1) %s at %v", name, ch.Replicas, map[int]string{1: "start", -1: "stop"}[c.sign], ch.At)
			case ch.At <= 0 || (duration > 0 && ch.At >= duration):
				bad("%s: at %v is outside the run; give a time after 0s and before the scenario's duration (%v)", name, ch.At, duration)
			default:
				steps = append(steps, step{ch.At, c.sign * ch.Replicas, name})
			}
		}
	}
	// Joins before leaves at the same instant.
	slices.SortStableFunc(steps, func(a, b step) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(b.delta, a.delta)
	})
	n := f.Size()
	for _, s := range steps {
		n += s.delta
		if n < 1 {
			bad("%s: at %v it leaves %d replicas; at least one must stay (fleet.replicas plus the joins before it, less the leaves)", s.name, s.at, n)
			return
		}
	}
}
