package keystore

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// losses collects the losses a store reports.
type losses struct {
	mu  sync.Mutex
	all []Loss
}

func (l *losses) add(x Loss) { l.mu.Lock(); l.all = append(l.all, x); l.mu.Unlock() }
func (l *losses) list() []Loss {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Loss(nil), l.all...)
}

// create makes key name on s, failing the test otherwise.
func create(t *testing.T, s Store, name string) {
	t.Helper()
	if _, err := s.Apply(context.Background(), name, func(cur *Record) (*Record, error) {
		if cur != nil && !cur.Revoked {
			return nil, ErrExists
		}
		return &Record{Key: config.Key{Name: name, SHA256: config.KeyHash("sk-" + name)}}, nil
	}); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// act changes key name on s as the admin API's action does.
func act(s Store, name, action string) error {
	_, err := s.Apply(context.Background(), name, func(cur *Record) (*Record, error) {
		switch {
		case cur == nil:
			return nil, ErrNotFound
		case cur.Revoked:
			return nil, errRevoked
		}
		switch action {
		case "revoke":
			cur.Revoked = true
		case "disable":
			cur.Disabled = true
		}
		return cur, nil
	})
	return err
}

// Redis restarted empty (no persistence) while two replicas hold the
// run-time keys: both find the loss (the fleet's epoch is gone), write
// back what they hold, and the keys stay manageable: a key made before
// the restart is revoked everywhere, a tombstone stays a tombstone, and
// a key made after the restart is seen at once by the other replica.
// Before, revoke answered "no key" and the other replica ignored the
// new key until the version counter passed its old value.
func TestRedisRestartedEmptyReseeds(t *testing.T) {
	own := redistest.Own(t)
	conn := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: own.Addr(), ContextTimeoutEnabled: true, DialTimeout: time.Second, DisableIdentity: true})
		t.Cleanup(func() { c.Close() })
		return c
	}
	var la, lb losses
	a := OpenRedis(conn(), RedisOptions{Prefix: "sluice:", OnLoss: la.add})
	defer a.Close()
	b := OpenRedis(conn(), RedisOptions{Prefix: "sluice:", OnLoss: lb.add})
	defer b.Close()
	for _, n := range []string{"k1", "k2", "k3", "k4"} {
		create(t, a, n)
	}
	if err := act(a, "k3", "revoke"); err != nil {
		t.Fatal(err)
	}
	if err := act(a, "k4", "disable"); err != nil {
		t.Fatal(err)
	}
	for range 6 { // the version well past what a fresh Redis reaches below
		if err := act(a, "k4", "disable"); err != nil {
			t.Fatal(err)
		}
	}
	held := a.Snapshot().Version
	waitFor(t, 2*time.Second, "b to hold every key", func() bool { return b.Snapshot().Version == held })

	own.Kill()
	own.Start()
	start := time.Now()
	// The other replica revokes a key made before the restart.
	if err := act(b, "k1", "revoke"); err != nil {
		t.Fatalf("revoking k1 after Redis restarted empty: %v", err)
	}
	t.Logf("revoke after the restart answered in %v (it waits for the fleet to write back its keys)", time.Since(start).Round(time.Millisecond))
	// A key made after the restart reaches the other replica at once.
	create(t, a, "fresh")
	waitFor(t, time.Second, "b to see the key made after the restart", func() bool { return b.Snapshot().Records["fresh"] != nil })
	waitFor(t, time.Second, "a to see k1 revoked", func() bool {
		r := a.Snapshot().Records["k1"]
		return r != nil && r.Revoked
	})
	for name, s := range map[string]Store{"a": a, "b": b} {
		snap := s.Snapshot()
		for k, want := range map[string]string{"k1": "revoked", "k2": "active", "k3": "revoked", "k4": "disabled", "fresh": "active"} {
			r := snap.Records[k]
			got := "missing"
			switch {
			case r == nil:
			case r.Revoked:
				got = "revoked"
			case r.Disabled:
				got = "disabled"
			default:
				got = "active"
			}
			if got != want {
				t.Errorf("replica %s: key %s is %s, want %s", name, k, got, want)
			}
		}
		if snap.Version <= held {
			t.Errorf("replica %s: version %d after the loss, not above the %d held before it", name, snap.Version, held)
		}
	}
	// Revoked keys stay revoked: a rotation of k3 finds its tombstone.
	if err := act(a, "k3", "disable"); !errors.Is(err, errRevoked) {
		t.Errorf("k3, revoked before the loss: %v, want revoked", err)
	}
	for name, l := range map[string]*losses{"a": &la, "b": &lb} {
		got := l.list()
		if len(got) != 1 || got[0].Was == "" || got[0].Is == got[0].Was || got[0].Held != 4 {
			t.Errorf("replica %s reported %+v, want one loss with the epoch changed and 4 records held", name, got)
		}
	}
}

// A version counter that went backwards (Redis failed over to a replica
// that had not caught up, with the fleet's epoch intact) is a loss too,
// not a stale read: the keys are written back within a poll or two.
func TestRedisVersionBackwardsReseeds(t *testing.T) {
	c := redistest.Conn(t)
	p := redistest.Prefix(t, c)
	var l losses
	s := OpenRedis(c, RedisOptions{Prefix: p, OnLoss: l.add})
	defer s.Close()
	create(t, s, "k1")
	create(t, s, "k2")
	if err := c.Del(context.Background(), p+"keys", p+"keys:version").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the keys written back", func() bool {
		n, _ := c.HLen(context.Background(), p+"keys").Result()
		return n == 2
	})
	waitFor(t, time.Second, "the loss reported", func() bool { return len(l.list()) == 1 })
	if got := l.list()[0]; !got.Backwards || got.Wrote != 2 {
		t.Errorf("reported %+v, want the version gone backwards and 2 written back", got)
	}
	if v := s.Snapshot().Version; v < 3 {
		t.Errorf("version %d after writing back, want above the 2 held", v)
	}
}

// Writing back never replaces a record written since the loss (in the
// current epoch), whatever its version, and of two records from before
// the loss the higher version wins: a replica that held a live key can
// never bring it back over a revocation made after the loss.
func TestReseedKeepsWhatWasWrittenSince(t *testing.T) {
	c := redistest.Conn(t)
	p := redistest.Prefix(t, c)
	s := OpenRedis(c, RedisOptions{Prefix: p})
	defer s.Close()
	ctx := context.Background()
	epoch := s.knownEpoch()
	put := func(r *Record) {
		data, _ := json.Marshal(r)
		c.HSet(ctx, p+"keys", r.Key.Name, data)
	}
	put(&Record{Key: config.Key{Name: "since"}, Revoked: true, Version: 2, Epoch: epoch})
	put(&Record{Key: config.Key{Name: "older"}, Version: 3, Epoch: "before"})
	put(&Record{Key: config.Key{Name: "newer"}, Version: 9, Epoch: "before"})
	held := &Snapshot{Version: 10, Loaded: true, Records: map[string]*Record{
		"since": {Key: config.Key{Name: "since"}, Version: 8, Epoch: "before"},
		"older": {Key: config.Key{Name: "older"}, Disabled: true, Version: 7, Epoch: "before"},
		"newer": {Key: config.Key{Name: "newer"}, Version: 5, Epoch: "before"},
		"gone":  {Key: config.Key{Name: "gone"}, Version: 4, Epoch: "before"},
	}}
	wrote, err := s.reseed(ctx, held, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if wrote != 2 {
		t.Errorf("wrote back %d, want 2 (older, gone)", wrote)
	}
	get := func(name string) Record {
		var r Record
		raw, _ := c.HGet(ctx, p+"keys", name).Result()
		json.Unmarshal([]byte(raw), &r)
		return r
	}
	if r := get("since"); !r.Revoked || r.Version != 2 {
		t.Errorf("the revocation made since the loss was replaced: %+v", r)
	}
	if r := get("older"); !r.Disabled || r.Version != 7 {
		t.Errorf("the higher version from before the loss did not win: %+v", r)
	}
	if r := get("newer"); r.Version != 9 {
		t.Errorf("a lower version replaced a higher one: %+v", r)
	}
	if r := get("gone"); r.Version != 4 {
		t.Errorf("a record Redis lacked was not written back: %+v", r)
	}
	if v, _ := c.Get(ctx, p+"keys:version").Uint64(); v != 11 {
		t.Errorf("version %d after writing back, want 11 (above the 10 held)", v)
	}
}
