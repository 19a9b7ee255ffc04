package spendstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/spend"
)

// Redis keeps spend in the fleet's store: one integer counter of
// micro-dollars per bucket, key <prefix>spend:<bucket>, expiring with
// its window (spend.Bucket.Expires). A reservation checks every limit
// and adds to every current bucket in one Lua script, so replicas never
// both take the last of a limit.
//
// Redis losing its data (restarted without persistence, failed over to
// a replica that had not caught up, or the keys deleted) must not grant
// a fresh allowance. Each replica remembers, per bucket it has used,
// the last total Redis told it and under which epoch: a random name
// kept at <prefix>spend:epoch, made afresh when that key is missing.
// Every call, and a sync every SyncEvery, sends that memory; when the
// epoch in Redis is not the one a memory was learnt under, the script
// raises the counter to the remembered total. A call from a replica
// that knew an older epoch marks the new one lost, and from then until
// Settle after the epoch began, reservations wait (they are not
// refused): by then every live replica's sync has re-seeded what it
// knew, so the counters are the highest total any live replica saw.
// What can still be lost is spend recorded only in Redis by replicas
// that died with it; a remembered total can be a little high (refunds
// settled since it was read), which errs toward spent. Redis must not
// evict these keys (maxmemory-policy noeviction): an evicted counter
// with its epoch intact is not seen as a loss.
//
// With Redis unreachable (or slower than the timeout), a replica
// decides alone from what it remembers plus what it has reserved since,
// and keeps those changes to send with its next call that Redis answers
// (added to the counters then). Each replica then admits up to the
// limit on its own view, so a fleet of N whose views were current can
// pass a limit by up to N requests' maxima for as long as Redis is
// gone, and a replica that never used a limit starts it from zero.
type Redis struct {
	rdb     *redis.Client
	prefix  string
	timeout time.Duration
	epoch   string // this process's name for epochs it may start
	calls   atomic.Uint64
	onError func(error)

	// settle is how long reservations wait after a loss is seen;
	// syncEvery how often each replica sends what it knows.
	settle, syncEvery time.Duration
	stop, done        chan struct{}
	closeOnce         sync.Once

	mu    sync.Mutex
	known map[string]*known
	// epochSeen is the epoch Redis answered with last.
	epochSeen string
	// now is the clock memory expiry is judged by.
	now func() time.Time
}

type known struct {
	v       price.Micros // the last total Redis reported
	epoch   string       // the epoch it was reported under
	pending price.Micros // changes made while Redis did not answer, unsent
	exp     time.Time
}

// RedisOptions configure a Redis store.
type RedisOptions struct {
	// Prefix is put before every key (fleet.prefix).
	Prefix string
	// Timeout bounds each call (default 250ms); past it, the replica
	// decides alone.
	Timeout time.Duration
	// OnError hears each failed call (for a log line and a metric).
	OnError func(error)
	// SyncEvery is how often the replica sends what it knows (default
	// 500ms); Settle how long reservations wait after a loss of Redis's
	// data is seen (default 4 x SyncEvery), so that every live replica
	// has re-seeded first.
	SyncEvery, Settle time.Duration
}

// NewRedis returns a store on rdb.
func NewRedis(rdb *redis.Client, o RedisOptions) *Redis {
	var b [8]byte
	rand.Read(b[:])
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	if o.OnError == nil {
		o.OnError = func(error) {}
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = 500 * time.Millisecond
	}
	if o.Settle <= 0 {
		o.Settle = 4 * o.SyncEvery
	}
	s := &Redis{rdb: rdb, prefix: o.Prefix, timeout: o.Timeout, epoch: hex.EncodeToString(b[:]), onError: o.OnError,
		known: map[string]*known{}, now: time.Now, settle: o.Settle, syncEvery: o.SyncEvery,
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.syncLoop()
	return s
}

// newEpoch names the epoch a call starts if Redis has none: never one
// this store named before, so a second loss is told from the first.
func (s *Redis) newEpoch() string { return s.epoch + "." + strconv.FormatUint(s.calls.Add(1), 36) }

// Key is bucket id's key in Redis.
func (s *Redis) Key(id string) string { return s.prefix + "spend:" + id }

// load reads a counter, first raising it to what the caller remembers
// when the memory is from another epoch, and adding the caller's
// unsent changes. Counters never go below zero.
const loadLua = `
local function load(key, exp, floor, fe, pending, epoch)
  local raw = redis.call('GET', key)
  local v = 0
  if raw then v = tonumber(raw) end
  local nv = v
  if fe ~= epoch and floor > nv then nv = floor end
  nv = nv + pending
  if nv < 0 then nv = 0 end
  if nv ~= v then
    redis.call('SET', key, nv, 'PXAT', exp)
  end
  return nv
end
-- The epoch: a hash {id, born (ms), lost}. Made afresh when missing;
-- marked lost when a caller arrives that knew another (ARGV[3]): the
-- data was lost, and until ARGV[4] ms after the epoch was born every
-- reservation waits, so that each live replica's sync re-seeds what it
-- knew before anything more is admitted.
local function epochOf()
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local e = redis.call('HMGET', KEYS[1], 'id', 'born', 'lost')
  local id, born, lost = e[1], tonumber(e[2] or '0'), e[3]
  if not id then
    id = ARGV[2]; born = now; lost = false
    redis.call('HSET', KEYS[1], 'id', id, 'born', now)
  end
  if ARGV[3] ~= '' and ARGV[3] ~= id and not lost then
    lost = '1'
    redis.call('HSET', KEYS[1], 'lost', '1')
  end
  local wait = 0
  local settle = tonumber(ARGV[4])
  if lost and now - born < settle then wait = settle - (now - born) end
  return id, wait
end
`

// reserveScript: KEYS[1] the epoch key, then every need's counted
// buckets in order. ARGV[1] the amount, ARGV[2] a new epoch's name,
// ARGV[3] the epoch the caller knew last, ARGV[4] the settling time
// after a loss (ms), ARGV[5] the number of needs, then each need's limit
// and bucket count, then each bucket's expiry (Unix ms), remembered
// total, its epoch and unsent changes. It admits when every need's sum
// is below its limit (spend.Fits), and then adds the amount to each
// need's last bucket. Returns {admitted (1, 0, or -1: wait), epoch,
// wait ms, totals...}.
var reserveScript = redis.NewScript(loadLua + `
local epoch, wait = epochOf()
local amount = tonumber(ARGV[1])
local nneeds = tonumber(ARGV[5])
local a = 6
local counts, limits = {}, {}
for i = 1, nneeds do
  limits[i] = tonumber(ARGV[a]); counts[i] = tonumber(ARGV[a + 1]); a = a + 2
end
local vals, exps, lasts = {}, {}, {}
local ok = 1
local k = 2
for i = 1, nneeds do
  local total = 0
  for j = 1, counts[i] do
    local v = load(KEYS[k], ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3]), epoch)
    vals[k - 1] = v; exps[k - 1] = ARGV[a]
    total = total + v
    a = a + 4; k = k + 1
  end
  lasts[i] = k - 2 -- vals index of the need's last bucket
  if not (total < limits[i]) then ok = 0 end
end
if wait > 0 then ok = -1 end
if ok == 1 then
  for i = 1, nneeds do
    local j = lasts[i]
    vals[j] = vals[j] + amount
    redis.call('SET', KEYS[j + 1], vals[j], 'PXAT', exps[j])
  end
end
local out = {ok, epoch, wait}
for j = 1, #vals do out[#out + 1] = vals[j] end
return out
`)

// adjustScript: KEYS[1] the epoch key, then the buckets. ARGV[1] the
// delta, ARGV[2..4] as reserveScript's, then each bucket's expiry,
// remembered total, its epoch and unsent changes (the delta added).
// Returns {epoch, totals...}.
var adjustScript = redis.NewScript(loadLua + `
local epoch = epochOf()
local out = {epoch}
local a = 5
for k = 2, #KEYS do
  out[#out + 1] = load(KEYS[k], ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3]), epoch)
  a = a + 4
end
return out
`)

// memory appends bucket b's arguments: expiry, remembered total, its
// epoch, unsent changes plus extra. It returns the unsent changes sent.
// Under mu.
func (s *Redis) memory(args []any, b spend.Bucket, extra price.Micros) ([]any, price.Micros) {
	k := s.known[b.ID]
	if k == nil {
		k = &known{exp: b.Expires}
		s.known[b.ID] = k
	}
	return append(args, b.Expires.UnixMilli(), int64(k.v), k.epoch, int64(k.pending+extra)), k.pending
}

// learn records what Redis answered for bucket b: its total, under
// epoch, once sent of its unsent changes were added. Under mu.
func (s *Redis) learn(b spend.Bucket, v price.Micros, epoch string, sent price.Micros) {
	k := s.known[b.ID]
	if k == nil {
		k = &known{}
		s.known[b.ID] = k
	}
	k.v, k.epoch, k.exp = v, epoch, b.Expires
	k.pending -= sent
}

// forget drops memories of buckets that expired. Under mu.
func (s *Redis) forget() {
	if len(s.known) < 1024 {
		return
	}
	now := s.now()
	for id, k := range s.known {
		if now.After(k.exp) {
			delete(s.known, id)
		}
	}
}

// Reserve implements Store. After a loss of Redis's data, it waits for
// the epoch to settle (at most Settle) before deciding.
func (s *Redis) Reserve(ctx context.Context, needs []spend.Need, amount price.Micros) (spend.Totals, *spend.Refusal, error) {
	for {
		t, r, wait, ok := s.reserve(ctx, needs, amount)
		if !ok {
			t, r := s.alone(needs, amount)
			return t, r, nil
		}
		if wait <= 0 {
			return t, r, nil
		}
		select {
		case <-ctx.Done():
			// Waited as long as the caller allows: decide on what Redis
			// has now, which every replica that synced has re-seeded.
			t, r := s.alone(needs, amount)
			return t, r, nil
		case <-time.After(min(wait, 100*time.Millisecond)):
		}
	}
}

// reserve makes one reserve call: ok false when Redis did not answer,
// wait positive when the epoch is settling.
func (s *Redis) reserve(ctx context.Context, needs []spend.Need, amount price.Micros) (spend.Totals, *spend.Refusal, time.Duration, bool) {
	keys := []string{s.Key("epoch")}
	args := []any{int64(amount), s.newEpoch(), s.lastEpoch(), s.settle.Milliseconds(), len(needs)}
	for _, n := range needs {
		args = append(args, int64(n.Limit.Amount), len(n.Count))
	}
	var buckets []spend.Bucket
	var sent []price.Micros
	s.mu.Lock()
	for _, n := range needs {
		for _, b := range n.Count {
			keys = append(keys, s.Key(b.ID))
			buckets = append(buckets, b)
			var p price.Micros
			args, p = s.memory(args, b, 0)
			sent = append(sent, p)
		}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := reserveScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err == nil && len(res) != 3+len(buckets) {
		err = fmt.Errorf("spend: the reserve script answered %d values, want %d", len(res), 3+len(buckets))
	}
	if err != nil {
		s.onError(err)
		return nil, nil, 0, false
	}
	admitted, _ := res[0].(int64)
	epoch, _ := res[1].(string)
	waitMs, _ := res[2].(int64)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget()
	s.epochSeen = epoch
	t := make(spend.Totals, len(needs))
	j := 0
	for i, n := range needs {
		t[i] = make([]price.Micros, len(n.Count))
		for c := range n.Count {
			v, _ := res[3+j].(int64)
			t[i][c] = price.Micros(v)
			s.learn(buckets[j], price.Micros(v), epoch, sent[j])
			j++
		}
	}
	switch admitted {
	case 1:
		return t, nil, 0, true
	case -1:
		return t, nil, max(time.Duration(waitMs)*time.Millisecond, time.Millisecond), true
	}
	r := spend.Decide(needs, t)
	if r == nil {
		// The script and Decide apply one comparison; should they ever
		// disagree, the script's refusal stands, for the first need over.
		r = &spend.Refusal{Limit: needs[0].Limit, Spent: t.Sum(0), Reset: needs[0].Ends}
	}
	return t, r, 0, true
}

// lastEpoch is the epoch this replica saw last ("" before any).
func (s *Redis) lastEpoch() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epochSeen
}

// syncLoop sends what this replica knows every SyncEvery, so that a
// loss of Redis's data is re-seeded by every live replica within the
// settling time, and changes kept while Redis did not answer reach it.
func (s *Redis) syncLoop() {
	defer close(s.done)
	t := time.NewTicker(s.syncEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		now := s.now()
		var buckets []spend.Bucket
		s.mu.Lock()
		for id, k := range s.known {
			if now.Before(k.exp) && len(buckets) < 512 {
				buckets = append(buckets, spend.Bucket{ID: id, Expires: k.exp})
			}
		}
		s.mu.Unlock()
		if len(buckets) > 0 {
			s.Adjust(context.Background(), buckets, 0)
		}
	}
}

// alone decides from memory while Redis does not answer, keeping an
// admitted reservation to send later.
func (s *Redis) alone(needs []spend.Need, amount price.Micros) (spend.Totals, *spend.Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.remembered(needs)
	if r := spend.Decide(needs, t); r != nil {
		return t, r
	}
	for i, n := range needs {
		s.pend(n.Reserve, amount)
		t[i][len(t[i])-1] += amount
	}
	return t, nil
}

// remembered is the needs' totals as this replica knows them. Under mu.
func (s *Redis) remembered(needs []spend.Need) spend.Totals {
	t := make(spend.Totals, len(needs))
	for i, n := range needs {
		t[i] = make([]price.Micros, len(n.Count))
		for j, b := range n.Count {
			if k := s.known[b.ID]; k != nil {
				t[i][j] = max(k.v+k.pending, 0)
			}
		}
	}
	return t
}

// pend keeps an unsent change to bucket b. Under mu.
func (s *Redis) pend(b spend.Bucket, d price.Micros) {
	k := s.known[b.ID]
	if k == nil {
		k = &known{exp: b.Expires}
		s.known[b.ID] = k
	}
	k.pending += d
}

// Adjust implements Store. Unanswered, the change is kept and sent
// with the bucket's next call.
func (s *Redis) Adjust(ctx context.Context, buckets []spend.Bucket, delta price.Micros) error {
	keys := []string{s.Key("epoch")}
	args := []any{int64(delta), s.newEpoch(), s.lastEpoch(), s.settle.Milliseconds()}
	var sent []price.Micros
	s.mu.Lock()
	for _, b := range buckets {
		keys = append(keys, s.Key(b.ID))
		var p price.Micros
		args, p = s.memory(args, b, delta)
		sent = append(sent, p)
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := adjustScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err == nil && len(res) != 1+len(buckets) {
		err = fmt.Errorf("spend: the adjust script answered %d values, want %d", len(res), 1+len(buckets))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.onError(err)
		for _, b := range buckets {
			s.pend(b, delta)
		}
		return nil
	}
	epoch, _ := res[0].(string)
	s.epochSeen = epoch
	for j, b := range buckets {
		v, _ := res[1+j].(int64)
		s.learn(b, price.Micros(v), epoch, sent[j])
	}
	return nil
}

// Read implements Store: the counters as Redis has them, or as this
// replica remembers them when it does not answer.
func (s *Redis) Read(ctx context.Context, needs []spend.Need) (spend.Totals, error) {
	var keys []string
	for _, n := range needs {
		for _, b := range n.Count {
			keys = append(keys, s.Key(b.ID))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.remembered(needs), err
	}
	t := make(spend.Totals, len(needs))
	j := 0
	for i, n := range needs {
		t[i] = make([]price.Micros, len(n.Count))
		for c := range n.Count {
			if str, ok := vals[j].(string); ok {
				v, _ := strconv.ParseInt(str, 10, 64)
				t[i][c] = price.Micros(v)
			}
			j++
		}
	}
	return t, nil
}

// Close stops the sync loop; the client is its owner's to close.
func (s *Redis) Close() error {
	s.closeOnce.Do(func() { close(s.stop); <-s.done })
	return nil
}
