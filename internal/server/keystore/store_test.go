package keystore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// Every change is atomic: concurrent changes to one record lose none.
func TestApplyIsAtomic(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		if _, err := s.Apply(ctx, "k", func(*Record) (*Record, error) {
			return &Record{Key: config.Key{Name: "k", Priority: "0"}}, nil
		}); err != nil {
			t.Fatal(err)
		}
		const n = 8
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Apply(ctx, "k", func(cur *Record) (*Record, error) {
					i, _ := strconv.Atoi(cur.Key.Priority)
					cur.Key.Priority = strconv.Itoa(i + 1)
					return cur, nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if got := s.Snapshot().Records["k"].Key.Priority; got != strconv.Itoa(n) {
			t.Fatalf("after %d concurrent increments the count is %s: a change was lost", n, got)
		}
	})
}

// A change that returns an error writes nothing.
func TestApplyErrorWritesNothing(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		v := s.Snapshot().Version
		_, err := s.Apply(context.Background(), "k", func(*Record) (*Record, error) { return nil, ErrNotFound })
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if s.Snapshot().Version != v || len(s.Snapshot().Records) != 0 {
			t.Fatal("a refused change was written")
		}
	})
}

// The file store survives a restart, writes the file 0600, and leaves no
// temporary file behind.
func TestFileStoreDurable(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if _, err := s.Apply(context.Background(), "a", func(*Record) (*Record, error) {
		return &Record{Key: config.Key{Name: "a", SHA256: config.KeyHash("x"), Limits: config.Limits{RPM: 5}}, ExpiresAt: &exp}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("keys.json mode %v, want 0600", st.Mode().Perm())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
	again, err := OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := again.Snapshot().Records["a"]
	if r == nil || r.Key.Limits.RPM != 5 || r.ExpiresAt == nil || !r.ExpiresAt.Equal(exp) || again.Snapshot().Version != 1 {
		t.Fatalf("after reopening: %+v", r)
	}
}

// A file that is not the store's refuses to open, saying what to do.
func TestFileStoreCorrupt(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileName), []byte("{not json"), 0o600)
	if _, err := OpenFile(dir); err == nil {
		t.Fatal("a corrupt keys.json opened")
	}
}

// A Redis store's change reaches another replica's store through the
// channel, well within a second.
func TestRedisFollows(t *testing.T) {
	c := redistest.Conn(t)
	p := redistest.Prefix(t, c)
	a := OpenRedis(c, RedisOptions{Prefix: p})
	defer a.Close()
	b := OpenRedis(c, RedisOptions{Prefix: p})
	defer b.Close()
	start := time.Now()
	if _, err := a.Apply(context.Background(), "k", func(*Record) (*Record, error) {
		return &Record{Key: config.Key{Name: "k"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, "seen by the other replica", func() bool { return b.Snapshot().Records["k"] != nil })
	t.Logf("a change reached the other replica's store in %v", time.Since(start))
}

// With the channel's announcement missed (written behind the store's
// back), the version poll still finds the change.
func TestRedisPolls(t *testing.T) {
	c := redistest.Conn(t)
	p := redistest.Prefix(t, c)
	s := OpenRedis(c, RedisOptions{Prefix: p})
	defer s.Close()
	ctx := context.Background()
	start := time.Now()
	c.HSet(ctx, p+"keys", "k", `{"key":{"Name":"k"}}`)
	c.Incr(ctx, p+"keys:version")
	waitFor(t, 2*PollEvery+time.Second, "found by the poll", func() bool { return s.Snapshot().Records["k"] != nil })
	t.Logf("a change announced nowhere was found by the poll after %v", time.Since(start))
}
