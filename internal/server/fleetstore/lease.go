package fleetstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options configures Leases and Channels.
type Options struct {
	// Prefix starts every key and channel; default DefaultPrefix.
	Prefix string
	// Timeout bounds each call; default 100 ms (these calls are off the
	// request path).
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Timeout <= 0 {
		o.Timeout = 100 * time.Millisecond
	}
	return o
}

// Leases hands out named, expiring ownership: one replica at a time
// probes a tripped provider, for instance. A holder that stops renewing
// loses the lease when its ttl runs out, and another may take it.
type Leases struct {
	rdb redis.UniversalClient
	o   Options
}

// NewLeases returns leases kept in Redis through rdb.
func NewLeases(rdb redis.UniversalClient, o Options) *Leases {
	return &Leases{rdb: rdb, o: o.withDefaults()}
}

// Key is the Redis key of lease name.
func (l *Leases) Key(name string) string { return l.o.Prefix + "lease:" + name }

// Lease acquires lease name for holder, or renews it if holder has it,
// for ttl (at least a millisecond), atomically: held reports whether
// holder has it now. On error held is false; whether to act without the
// lease then is the caller's choice.
func (l *Leases) Lease(ctx context.Context, name, holder string, ttl time.Duration) (held bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	ms := max(ttl.Milliseconds(), 1)
	n, err := leaseScript.Run(ctx, l.rdb, []string{l.Key(name)}, holder, ms).Int64()
	return err == nil && n == 1, err
}

// Release gives lease name up if holder has it, so another may take it
// at once; a lease someone else holds is left alone.
func (l *Leases) Release(ctx context.Context, name, holder string) error {
	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	return releaseScript.Run(ctx, l.rdb, []string{l.Key(name)}, holder).Err()
}
