package scenario

import "time"

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

// Size is the number of replicas: at least 1.
func (f Fleet) Size() int { return max(1, f.Replicas) }

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
}
