package keystore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/server/fleetstore"
)

// redisAddr is the Redis the tests run against.
func redisAddr() string {
	if a := os.Getenv("SLUICE_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// testClient returns a client for the test Redis. Without one the test
// fails, saying how to start it (in -short mode, it is skipped).
func testClient(t testing.TB) *redis.Client {
	t.Helper()
	addr := redisAddr()
	c := fleetstore.NewClient(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		msg := "package keystore's tests need a Redis at " + addr + " (set SLUICE_TEST_REDIS=host:port for another): " + err.Error() +
			"\nstart one with: apt-get install -y redis-server && redis-server --save '' --appendonly no --daemonize yes"
		if testing.Short() {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testPrefix is a key prefix unique to this test; its keys are deleted
// when the test ends.
func testPrefix(t testing.TB, c *redis.Client) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	p := "sluicetest:" + strings.ReplaceAll(t.Name(), "/", ".") + ":" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, p+"*", 100).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return p
}

// waitFor polls cond every few milliseconds until it holds, failing the
// test after d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: still not %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stores runs f on each backend: the file store in a fresh directory,
// and Redis under a fresh prefix.
func stores(t *testing.T, f func(t *testing.T, s Store)) {
	t.Run("file", func(t *testing.T) {
		s, err := OpenFile(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		f(t, s)
	})
	t.Run("redis", func(t *testing.T) {
		c := testClient(t)
		s := OpenRedis(c, RedisOptions{Prefix: testPrefix(t, c)})
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}
