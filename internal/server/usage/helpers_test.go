package usage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sort"
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
		msg := "package usage's Redis tests need a Redis at " + addr + " (set SLUICE_TEST_REDIS=host:port for another): " + err.Error() +
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

// readDay is day's records in s, sorted.
func readDay(t testing.TB, s Store, day string) []Record {
	t.Helper()
	var out []Record
	if err := s.Read(context.Background(), day, func(r Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatalf("read %s: %v", day, err)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

// stores are the three stores, each fresh, for tests every store must
// pass.
func stores(t *testing.T) map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"memory": func(t *testing.T) Store { return NewMemoryStore() },
		"file": func(t *testing.T) Store {
			s, err := NewFileStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"redis": func(t *testing.T) Store {
			c := testClient(t)
			return NewRedisStore(c, testPrefix(t, c), 400)
		},
	}
}
