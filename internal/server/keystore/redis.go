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

	"github.com/sluice-gw/sluice/internal/server/fleetstore"
)

// PollEvery is how often a Redis store reads the version counter and
// the fleet's epoch, in case a change's announcement was missed, or
// Redis lost its data.
const PollEvery = 250 * time.Millisecond

// Redis keeps the records in Redis (see the package comment).
type Redis struct {
	rdb      redis.UniversalClient
	hash     string // <prefix>keys
	version  string // <prefix>keys:version
	channel  string // <prefix>chan:keys
	epochKey string // the fleet's epoch (fleetstore.EpochKey)
	timeout  time.Duration
	settle   time.Duration
	onLoss   func(Loss)
	onError  func(error)
	snap     atomic.Pointer[Snapshot]
	mu       sync.Mutex // serialises reads, so an older one cannot overwrite a newer
	// epoch is the fleet's epoch the last read found ("" before any);
	// settleUntil, when a loss was seen, is the instant until which
	// changes wait for every live replica to write back what it holds.
	// Both under mu.
	epoch       string
	settleUntil time.Time
	stop        context.CancelFunc
	done        chan struct{}
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
	// Settle is how long changes wait after a loss of Redis's data was
	// first seen, so that every live replica has written back the
	// records it holds first (default 4 x PollEvery: each finds the loss
	// at its next poll).
	Settle time.Duration
	// OnLoss, when set, hears each loss of Redis's data the store found,
	// after it wrote back the records it holds. It must not block.
	OnLoss func(Loss)
	// OnError, when set, hears each read (a poll's included) that Redis
	// did not answer. It must not block.
	OnError func(error)
}

// Loss is a loss of Redis's data a store found (the fleet's epoch
// missing or changed since its last read, or the version counter below
// the one it read last), and what it wrote back.
type Loss struct {
	// Was and Is are the fleet's epoch before and after (equal when
	// only the version went backwards).
	Was, Is string
	// Backwards: the version counter was below the last one read.
	Backwards bool
	// Held is how many records this replica held (tombstones
	// included); Wrote how many of them Redis lacked, or held at a lower
	// version from before the loss, and were written back.
	Held, Wrote int
}

// OpenRedis reads the records and follows their changes until Close.
func OpenRedis(rdb redis.UniversalClient, o RedisOptions) *Redis {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Wait <= 0 {
		o.Wait = o.Timeout
	}
	if o.Settle <= 0 {
		o.Settle = 4 * PollEvery
	}
	s := &Redis{rdb: rdb, hash: o.Prefix + "keys", version: o.Prefix + "keys:version", channel: o.Prefix + "chan:keys",
		epochKey: fleetstore.EpochKey(o.Prefix), timeout: o.Timeout, settle: o.Settle, onLoss: o.OnLoss, onError: o.OnError,
		done: make(chan struct{})}
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
// when the version or the fleet's epoch moved since the last read.
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
			if s.moved(ctx) {
				s.readCtx(ctx)
			}
		}
	}
}

// moved reports whether the version or the fleet's epoch differ from
// the last read's (or nothing was read yet): one round trip.
func (s *Redis) moved(ctx context.Context) bool {
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var ep, ver *redis.StringCmd
	_, err := s.rdb.Pipelined(c, func(p redis.Pipeliner) error {
		ep = p.HGet(c, s.epochKey, "id")
		ver = p.Get(c, s.version)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		s.failed(err)
		return false
	}
	v, err := ver.Uint64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return true // not a number: let the read say what it finds
	}
	cur := s.snap.Load()
	s.mu.Lock()
	known := s.epoch
	s.mu.Unlock()
	return !cur.Loaded || v != cur.Version || ep.Val() != known
}

func (s *Redis) failed(err error) {
	if s.onError != nil && err != nil && ctxAlive(err) {
		s.onError(err)
	}
}

// ctxAlive: err is not the store's own Close cancelling a call.
func ctxAlive(err error) bool { return !errors.Is(err, context.Canceled) }

func (s *Redis) readCtx(ctx context.Context) {
	c, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.read(c)
}

// readScript reads the fleet's epoch (making it when missing, and
// marking it lost when the caller knew another), the version and every
// record, at one instant. KEYS: the epoch, the version, the hash; ARGV:
// a new epoch's name, the epoch the caller knew. Returns {epoch, lost,
// now, version, {name, record, ...}}.
var readScript = redis.NewScript(fleetstore.EpochLua + `
local id, lost, now = fleetEpoch(KEYS[1], ARGV[1], ARGV[2])
local v = redis.call('GET', KEYS[2]) or '0'
return {id, lost, now, v, redis.call('HGETALL', KEYS[3])}
`)

// reseedScript writes back the records a replica holds after a loss of
// Redis's data: each one Redis lacks, or holds at a lower version
// written before the loss (its epoch is not the current one); a record
// written since the loss is never replaced. It then raises the version
// above every version the replica held, bumps it, and announces the
// change. KEYS: the version, the hash; ARGV: the highest version held,
// the channel, the current epoch, then (name, version, record) per
// record. Returns {written, version}.
var reseedScript = redis.NewScript(`
local held = tonumber(ARGV[1])
local wrote = 0
for i = 4, #ARGV, 3 do
  local name, ver, raw = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local cur = redis.call('HGET', KEYS[2], name)
  local write = false
  if not cur then
    write = true
  else
    local ok, rec = pcall(cjson.decode, cur)
    if ok and type(rec) == 'table' then
      local cv = tonumber(rec['version']) or 0
      if rec['epoch'] ~= ARGV[3] and cv < ver then write = true end
    end
  end
  if write then
    redis.call('HSET', KEYS[2], name, raw)
    wrote = wrote + 1
  end
end
local v = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if v < held then v = held end
v = v + 1
redis.call('SET', KEYS[1], v)
redis.call('PUBLISH', ARGV[2], '*')
return {wrote, v}
`)

// read loads the fleet's epoch, every record and the version at one
// instant, and publishes them, unless Redis lost its data since the last
// read: the epoch changed, or the version went backwards (no later read
// can be older than an earlier one: reads are serialised, and Redis
// answers them in order). Then the records this replica holds are
// written back first (reseed), and read again with what the others
// wrote back, so a key revoked before the loss stays revoked and one
// made after it is seen at once.
func (s *Redis) read(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.readLocked(ctx, true)
	s.failed(err)
	return err
}

// errLostAgain: a re-read right after writing back found Redis lost
// its data again; the next poll starts over.
var errLostAgain = errors.New("keystore: Redis lost its data again while the records were written back")

func (s *Redis) readLocked(ctx context.Context, mayReseed bool) error {
	known := s.epoch
	res, err := readScript.Run(ctx, s.rdb, []string{s.epochKey, s.version, s.hash}, fleetstore.NewEpochName(), known).Slice()
	if err == nil && len(res) != 5 {
		err = fmt.Errorf("keystore: the read script answered %d values, want 5", len(res))
	}
	if err != nil {
		return err
	}
	id, _ := res[0].(string)
	lost, _ := res[1].(int64)
	now, _ := res[2].(int64)
	vs, _ := res[3].(string)
	v, err := strconv.ParseUint(vs, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s holds %q, not a version; delete it to repair", ErrUnavailable, s.version, vs)
	}
	flat, _ := res[4].([]any)
	cur := s.snap.Load()
	backwards := cur.Loaded && v < cur.Version
	if fleetstore.EpochLost(known, id) || backwards {
		if !mayReseed {
			return errLostAgain
		}
		loss := Loss{Was: known, Is: id, Backwards: backwards, Held: len(cur.Records)}
		if loss.Wrote, err = s.reseed(ctx, cur, id); err != nil {
			return err // the known epoch stays: the next poll tries again
		}
		s.epoch = id
		s.noteSettle(lost, now)
		if s.onLoss != nil {
			s.onLoss(loss)
		}
		return s.readLocked(ctx, false)
	}
	s.epoch = id
	s.noteSettle(lost, now)
	snap := &Snapshot{Version: v, Loaded: true, Records: make(map[string]*Record, len(flat)/2)}
	for i := 0; i+1 < len(flat); i += 2 {
		name, _ := flat[i].(string)
		raw, _ := flat[i+1].(string)
		var r Record
		if json.Unmarshal([]byte(raw), &r) != nil || r.Key.Name != name {
			continue // not a record this store wrote: left alone
		}
		snap.Records[name] = &r
	}
	s.snap.Store(snap)
	return nil
}

// reseed writes back the records of snap, which this replica held
// before Redis lost its data, under the current epoch (reseedScript),
// and returns how many Redis took.
func (s *Redis) reseed(ctx context.Context, snap *Snapshot, epoch string) (int, error) {
	held := snap.Version
	args := []any{0, s.channel, epoch}
	for name, r := range snap.Records {
		data, err := json.Marshal(r)
		if err != nil {
			continue
		}
		held = max(held, r.Version)
		args = append(args, name, r.Version, data)
	}
	args[0] = held
	res, err := reseedScript.Run(ctx, s.rdb, []string{s.version, s.hash}, args...).Slice()
	if err != nil {
		return 0, err
	}
	wrote, _ := res[0].(int64)
	return int(wrote), nil
}

// noteSettle takes the instant the current epoch was marked lost (lost,
// ms on Redis's clock; 0: never) read when Redis's clock said now (ms),
// and makes changes wait until Settle after it. Under mu.
func (s *Redis) noteSettle(lost, now int64) {
	if lost <= 0 {
		return
	}
	left := time.Duration(lost-now)*time.Millisecond + s.settle
	if left <= 0 {
		return
	}
	if until := time.Now().Add(left); until.After(s.settleUntil) {
		s.settleUntil = until
	}
}

// settled waits until changes may go on after a loss of Redis's data
// (noteSettle), or ctx ends.
func (s *Redis) settled(ctx context.Context) error {
	s.mu.Lock()
	left := time.Until(s.settleUntil)
	s.mu.Unlock()
	if left <= 0 {
		return nil
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *Redis) knownEpoch() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
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

// errEpochMoved: the fleet's epoch is not the one the store read last,
// so Redis lost its data since; Apply reads (and writes back what it
// holds) before it tries the change again.
var errEpochMoved = errors.New("keystore: the fleet's epoch moved")

// Apply implements Store. It reads first, so that a loss of Redis's
// data is found and what this replica holds is written back before the
// change (and, after a loss, waits Settle for the other replicas to
// write back theirs). Then: WATCH the hash, the version and the fleet's
// epoch, read the record, compute the new one, and write it (with the
// next version and the epoch), bump the version and announce the change
// in one MULTI, which Redis refuses if any of them changed since the
// WATCH; then try again on the new state.
func (s *Redis) Apply(ctx context.Context, name string, change Change) (*Record, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.read(ctx); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := s.settled(ctx); err != nil {
		return nil, fmt.Errorf("%w: waiting for the fleet to write back its keys after Redis lost its data: %v", ErrUnavailable, err)
	}
	var out *Record
	var changeErr error
	txf := func(tx *redis.Tx) error {
		ep, err := tx.HGet(ctx, s.epochKey, "id").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if known := s.knownEpoch(); ep != known {
			return errEpochMoved
		}
		v, err := tx.Get(ctx, s.version).Uint64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("%w: %s is not a version (%v); delete it to repair", ErrUnavailable, s.version, err)
		}
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
		next.Version, next.Epoch = v+1, ep
		data, err := json.Marshal(next)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, s.hash, name, data)
			p.Set(ctx, s.version, v+1, 0)
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
		err := s.rdb.Watch(ctx, txf, s.hash, s.version, s.epochKey)
		if (errors.Is(err, redis.TxFailedErr) || errors.Is(err, errEpochMoved)) && try < maxTries {
			if errors.Is(err, errEpochMoved) {
				if err := s.read(ctx); err != nil {
					return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
				}
				if err := s.settled(ctx); err != nil {
					return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
				}
			}
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
