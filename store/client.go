package store

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// NewClient returns a client for the Redis at addr (host:port) set up
// for the store: every call bounded by its context's deadline, so a
// budget call never outlasts its Timeout, and no CLIENT SETINFO on
// connect.
func NewClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		DisableIdentity:       true,
	})
}
