package keystore

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/server/redistest"
)

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
		c := redistest.Conn(t)
		s := OpenRedis(c, RedisOptions{Prefix: redistest.Prefix(t, c)})
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}
