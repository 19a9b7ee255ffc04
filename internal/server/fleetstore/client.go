package fleetstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// NewClient returns a client for the Redis at addr (host:port) set up
// for the store: every call bounded by its context's deadline, so a
// budget call never outlasts its Timeout, and no CLIENT SETINFO on
// connect.
func NewClient(addr string) *redis.Client {
	quietOnce.Do(quiet)
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		DisableIdentity:       true,
	})
}

// NewClientURL is NewClient for a redis:// or rediss:// URL (with its
// password and database, if any).
func NewClientURL(url string) (*redis.Client, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	quietOnce.Do(quiet)
	o.ContextTimeoutEnabled = true
	o.DisableIdentity = true
	if o.DialTimeout > time.Second || o.DialTimeout == 0 {
		o.DialTimeout = time.Second
	}
	return redis.NewClient(o), nil
}

// The client library logs connection failures to standard error on its
// own; the store reports them once, through BudgetOptions.OnMode, to the
// gateway's log, so a Redis that is down does not flood the terminal.
var quietOnce sync.Once

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func quiet() { redis.SetLogger(quietLogger{}) }

// KeyError reports whether err is Redis answering that one key holds
// something the store cannot use (WRONGTYPE: someone wrote a string
// where a hash or a sorted set belongs), rather than Redis not
// answering. Redis is up then: the store treats that key alone as
// broken (its budget decided locally, the count kept as it was, the
// lease not taken), logs it, and shares everything else as before.
func KeyError(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "WRONGTYPE")
}
