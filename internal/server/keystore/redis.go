package keystore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// PollEvery is how often a Redis store reads the version counter, in case
// a change's announcement was missed.
const PollEvery = 250 * time.Millisecond

// Redis keeps the records in Redis (see the package comment).
type Redis struct {
	rdb     redis.UniversalClient
	hash    string // <prefix>keys
	version string // <prefix>keys:version
	channel string // <prefix>chan:keys
	timeout time.Duration
	snap    atomic.Pointer[Snapshot]
	mu      sync.Mutex // serialises reads, so an older one cannot overwrite a newer
	stop    context.CancelFunc
	done    chan struct{}
}

var _ Store = (*Redis)(nil)

// RedisOptions configure a Redis store.
type RedisOptions struct {
	// Prefix starts every name in Redis (fleet.prefix).
	Prefix string
	// Timeout bounds each call (default 2 s: key changes are rare and
	// are not on a request's path).
	Timeout time.Duration
	// Wait bounds how long OpenRedis waits for the first read (default
	// Timeout); past it the store starts empty and not Loaded, and
	// reads again on every poll.
	Wait time.Duration
}

// OpenRedis reads the records and follows their changes until Close.
func OpenRedis(rdb redis.UniversalClient, o RedisOptions) *Redis {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Wait <= 0 {
		o.Wait = o.Timeout
	}
	s := &Redis{rdb: rdb, hash: o.Prefix + "keys", version: o.Prefix + "keys:version", channel: o.Prefix + "chan:keys",
		timeout: o.Timeout, done: make(chan struct{})}
	s.snap.Store(&Snapshot{Records: map[string]*Record{}})
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	first, fcancel := context.WithTimeout(ctx, o.Wait)
	s.read(first)
	fcancel()
	ps := rdb.Subscribe(ctx, s.channel)
	go s.follow(ctx, ps)
	return s
}

// follow reads the records when the channel announces a change, and
// when the version moved since the last read.
func (s *Redis) follow(ctx context.Context, ps *redis.PubSub) {
	defer close(s.done)
	defer ps.Close()
	msgs := ps.Channel()
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-msgs:
			if !ok {
				return
			}
			s.readCtx(ctx)
		case <-tick.C:
			c, cancel := context.WithTimeout(ctx, s.timeout)
			v, err := s.rdb.Get(c, s.version).Uint64()
			cancel()
			if errors.Is(err, redis.Nil) {
				v, err = 0, nil
			}
			if cur := s.snap.Load(); err == nil && (!cur.Loaded || v != cur.Version) {
				s.readCtx(ctx)
			}
		}
	}
}

func (s *Redis) readCtx(ctx context.Context) {
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.read(c)
}

// read loads every record and the version in one transaction, and
// publishes them unless a newer read already did.
func (s *Redis) read(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all *redis.MapStringStringCmd
	var ver *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ver = p.Get(ctx, s.version)
		all = p.HGetAll(ctx, s.hash)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	v, verr := ver.Uint64()
	if verr != nil && !errors.Is(verr, redis.Nil) {
		return verr
	}
	cur := s.snap.Load()
	if cur.Loaded && v < cur.Version {
		return nil
	}
	snap := &Snapshot{Version: v, Loaded: true, Records: make(map[string]*Record, len(all.Val()))}
	for name, raw := range all.Val() {
		var r Record
		if json.Unmarshal([]byte(raw), &r) != nil || r.Key.Name != name {
			continue // not a record this store wrote: left alone
		}
		snap.Records[name] = &r
	}
	s.snap.Store(snap)
	return nil
}

// Snapshot implements Store.
func (s *Redis) Snapshot() *Snapshot { return s.snap.Load() }

// Where implements Store.
func (s *Redis) Where() string { return "redis " + s.hash }

// Close implements Store.
func (s *Redis) Close() error {
	s.stop()
	<-s.done
	return nil
}

// maxTries bounds how often Apply retries a change whose read went stale.
const maxTries = 100

// Apply implements Store: WATCH the hash, read the record, compute the
// new one, and write it, bump the version and announce the change in one
// MULTI, which Redis refuses if the hash changed since the WATCH; then
// try again on the new state.
func (s *Redis) Apply(ctx context.Context, name string, change Change) (*Record, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var out *Record
	var changeErr error
	txf := func(tx *redis.Tx) error {
		raw, err := tx.HGet(ctx, s.hash, name).Result()
		var cur *Record
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return err
		default:
			var r Record
			if err := json.Unmarshal([]byte(raw), &r); err != nil {
				return fmt.Errorf("%w: %s field %s is not a key record; delete it to repair", ErrUnavailable, s.hash, strconv.Quote(name))
			}
			cur = &r
		}
		next, err := change(cur)
		if err != nil {
			changeErr = err
			return nil
		}
		data, err := json.Marshal(next)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, s.hash, name, data)
			p.Incr(ctx, s.version)
			p.Publish(ctx, s.channel, name)
			return nil
		})
		if err == nil {
			out = next
		}
		return err
	}
	for try := 0; ; try++ {
		changeErr, out = nil, nil
		err := s.rdb.Watch(ctx, txf, s.hash)
		if errors.Is(err, redis.TxFailedErr) && try < maxTries {
			continue
		}
		if changeErr != nil {
			return nil, changeErr
		}
		if err != nil {
			if errors.Is(err, ErrUnavailable) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		break
	}
	// Publish before returning, so the caller's own next request sees
	// its change.
	c, cancel2 := context.WithTimeout(context.Background(), s.timeout)
	s.read(c)
	cancel2()
	return out, nil
}
