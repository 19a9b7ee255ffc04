package spendstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/spend"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
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
// the last total Redis told it and under which epoch: the fleet's
// (fleetstore.EpochKey, a random name made afresh when missing, which
// the heartbeat and the run-time keys read too). Every call, and a sync
// every SyncEvery, sends that memory; when the epoch in Redis is not
// the one a memory was learnt under, the script raises the counter to
// the remembered total. The first call of any part of any replica that
// knew an older epoch marks the new one lost, and from then until
// Settle after it, reservations wait (they are not refused): by then
// every live replica's sync has re-seeded what it knew, so the counters
// are the highest total any live replica saw. A replica's memory of a
// bucket is the latest total Redis told it: each answer carries a
// sequence number (per epoch), and an answer that arrives after a later
// one does not lower the memory, so a replica never re-seeds less than
// it knew was spent. What can still be lost is spend recorded only in
// Redis by replicas that died with it; a remembered total can be a
// little high (refunds settled since it was read), which errs toward
// spent. Redis must not evict these keys (maxmemory-policy noeviction):
// an evicted counter with its epoch intact is not seen as a loss.
//
// With Redis unreachable (or slower than the timeout), a replica
// decides alone (after a call Redis did not answer, at once, without
// asking it, until its sync loop's ping is answered), and keeps what it reserves and settles to send with
// its next call that Redis answers (added to the counters then). Alone,
// it may spend only its share of the headroom it last saw: with N the
// fleet's live replicas as its census last counted them (Replicas), it
// admits while what it last saw plus N times what it added since is
// under the limit (its refunds counted once), so each replica takes at
// most 1/N of what was left, plus one request, and a fleet of N passes a
// limit by at most N requests' maxima however long Redis is gone. A
// replica that never used a limit starts it from zero.
type Redis struct {
	rdb     *redis.Client
	prefix  string
	timeout time.Duration
	epoch   string // this process's name for epochs it may start
	calls   atomic.Uint64
	onError func(error)
	// away: Redis did not answer this replica's last call. Requests
	// then decide alone at once, without asking it, and the sync loop
	// pings it (a ping, not a change: a call that times out in a paused
	// Redis still runs when it resumes, and a change sent again after
	// it would count twice); its first answer ends the spell.
	awayNow atomic.Bool

	// settle is how long reservations wait after a loss is seen;
	// syncEvery how often each replica sends what it knows.
	settle, syncEvery time.Duration
	// recheck: RedisOptions.Recheck.
	recheck    time.Duration
	stop, done chan struct{}
	closeOnce  sync.Once
	// replicas is the fleet's live replica count (Replicas), read while
	// Redis does not answer.
	replicas atomic.Pointer[func() int]
	onLoss   func(old, new string)

	mu    sync.Mutex
	known map[string]*known
	// epochSeen is the epoch Redis answered with last, and epochLeft
	// the one before it (an answer under it, arriving late, is not a
	// new loss).
	epochSeen, epochLeft string
	// now is the clock memory expiry is judged by.
	now func() time.Time
}

type known struct {
	v       price.Micros // the last total Redis reported
	epoch   string       // the epoch it was reported under
	seq     int64        // the answer's sequence number in that epoch
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
	// Replicas is the fleet's live replica count (fleetstore
	// Members.Live: the census, which holds the last count while Redis
	// does not answer); alone, the replica spends 1/Replicas() of the
	// headroom it last saw. Nil counts 1 (CountReplicas sets it later).
	Replicas func() int
	// OnLoss, when set, hears each loss of Redis's data this store
	// found (the fleet's epoch changed since its last answer). It must
	// not block.
	OnLoss func(old, new string)
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
		known: map[string]*known{}, now: time.Now, settle: o.Settle, syncEvery: o.SyncEvery, onLoss: o.OnLoss,
		stop: make(chan struct{}), done: make(chan struct{})}
	if o.Replicas != nil {
		s.CountReplicas(o.Replicas)
	}
	go s.syncLoop()
	return s
}

// CountReplicas sets where the fleet's live replica count is read
// (RedisOptions.Replicas), for a store opened before the fleet was.
func (s *Redis) CountReplicas(f func() int) { s.replicas.Store(&f) }

// liveReplicas is the count the share divides by: at least 1.
func (s *Redis) liveReplicas() int {
	if f := s.replicas.Load(); f != nil {
		return max((*f)(), 1)
	}
	return 1
}

// newEpoch names the epoch a call starts if Redis has none: never one
// this store named before, so a second loss is told from the first.
func (s *Redis) newEpoch() string { return s.epoch + "." + strconv.FormatUint(s.calls.Add(1), 36) }

// Key is bucket id's key in Redis.
func (s *Redis) Key(id string) string { return s.prefix + "spend:" + id }

// epochKey is the fleet's epoch (fleetstore.EpochKey).
func (s *Redis) epochKey() string { return fleetstore.EpochKey(s.prefix) }

// floorKey is the companion of bucket key k that holds the floor merged
// into it in the current epoch (loadLua).
func floorKey(k string) string { return k + ":floor" }

// load reads a counter, merging in what the caller remembers when the
// memory is from another epoch, and adding the caller's unsent changes.
// Counters never go below zero.
//
// The merge: after a loss a counter must end at the highest total any
// replica remembers plus everything any of them added since (unsent
// changes from deciding alone, and new reservations), in whatever order
// their calls arrive. So each bucket has a companion key (floorKey,
// "<epoch>|<floor>", expiring with the bucket), made at the bucket's
// first touch in an epoch with what the counter held then (0 after a
// loss; the counter itself when it survived), and a remembered total
// above that floor adds only the difference and becomes the floor:
// raising the counter to a memory instead would swallow what others
// had added before it.
const loadLua = `
local function load(key, fkey, exp, floor, fe, pending, epoch)
  local raw = redis.call('GET', key)
  local v = 0
  if raw then v = tonumber(raw) end
  local nv = v
  local f = nil
  local fr = redis.call('GET', fkey)
  if fr then
    local fep, fv = string.match(fr, '^(.*)|(%d+)$')
    if fep == epoch then f = tonumber(fv) end
  end
  if f == nil then
    f = v
    redis.call('SET', fkey, epoch .. '|' .. string.format('%d', f), 'PXAT', exp)
  end
  if fe ~= epoch and floor > f then
    nv = nv + (floor - f)
    redis.call('SET', fkey, epoch .. '|' .. string.format('%d', floor), 'PXAT', exp)
  end
  nv = nv + pending
  if nv < 0 then nv = 0 end
  if nv ~= v then
    redis.call('SET', key, nv, 'PXAT', exp)
  end
  return nv
end
-- The fleet's epoch (fleetstore.EpochLua): made afresh when missing;
-- marked lost when a caller arrives that knew another (ARGV[3]): the
-- data was lost, and until ARGV[4] ms after it was marked every
-- reservation waits, so that each live replica's sync re-seeds what it
-- knew before anything more is admitted. seq numbers the answers in the
-- epoch, so a replica can tell the later of two.
local function epochOf()
  local id, lost, now = fleetEpoch(KEYS[1], ARGV[2], ARGV[3])
  local wait = 0
  local settle = tonumber(ARGV[4])
  if lost > 0 and now - lost < settle then wait = settle - (now - lost) end
  local seq = redis.call('HINCRBY', KEYS[1], 'spend_seq', 1)
  return id, wait, seq
end
`

// reserveScript: KEYS[1] the epoch key, then every need's counted
// buckets in order, then their floor keys in the same order. ARGV[1] the amount, ARGV[2] a new epoch's name,
// ARGV[3] the epoch the caller knew last, ARGV[4] the settling time
// after a loss (ms), ARGV[5] the number of needs, then each need's limit
// and bucket count, then each bucket's expiry (Unix ms), remembered
// total, its epoch and unsent changes. It admits when every need's sum
// is below its limit (spend.Fits), and then adds the amount to each
// need's last bucket. Returns {admitted (1, 0, or -1: wait), epoch,
// wait ms, seq, totals...}.
var reserveScript = redis.NewScript(fleetstore.EpochLua + loadLua + `
local epoch, wait, seq = epochOf()
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
local nb = (#KEYS - 1) / 2
for i = 1, nneeds do
  local total = 0
  for j = 1, counts[i] do
    local v = load(KEYS[k], KEYS[k + nb], ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3]), epoch)
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
local out = {ok, epoch, wait, seq}
for j = 1, #vals do out[#out + 1] = vals[j] end
return out
`)

// adjustScript: KEYS[1] the epoch key, then the buckets, then their
// floor keys. ARGV[1] the
// delta, ARGV[2..4] as reserveScript's, then each bucket's expiry,
// remembered total, its epoch and unsent changes (the delta added).
// Returns {epoch, seq, totals...}.
var adjustScript = redis.NewScript(fleetstore.EpochLua + loadLua + `
local epoch, _, seq = epochOf()
local out = {epoch, seq}
local a = 5
local nb = (#KEYS - 1) / 2
for k = 2, nb + 1 do
  out[#out + 1] = load(KEYS[k], KEYS[k + nb], ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3]), epoch)
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
// epoch, as answer seq, once sent of its unsent changes were added. An
// answer older than one already learnt (concurrent calls' answers
// arrive in any order) does not replace the later total. Under mu.
func (s *Redis) learn(b spend.Bucket, v price.Micros, epoch string, seq int64, sent price.Micros) {
	k := s.known[b.ID]
	if k == nil {
		k = &known{}
		s.known[b.ID] = k
	}
	k.pending -= sent
	k.exp = b.Expires
	if epoch == k.epoch && seq <= k.seq {
		return
	}
	if epoch != k.epoch && epoch == s.epochLeft {
		return // a late answer from before a loss already learnt
	}
	k.v, k.epoch, k.seq = v, epoch, seq
}

// sawEpoch notes the epoch an answer came under, and tells OnLoss of a
// new one after another. Under mu.
func (s *Redis) sawEpoch(epoch string) {
	if epoch == "" || epoch == s.epochSeen || epoch == s.epochLeft {
		return
	}
	old := s.epochSeen
	s.epochLeft, s.epochSeen = old, epoch
	if old != "" && s.onLoss != nil {
		s.onLoss(old, epoch)
	}
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
	if s.away() {
		return nil, nil, 0, false
	}
	keys := []string{s.epochKey()}
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
	for _, b := range buckets {
		keys = append(keys, floorKey(s.Key(b.ID)))
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := reserveScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err == nil && len(res) != 4+len(buckets) {
		err = fmt.Errorf("spend: the reserve script answered %d values, want %d", len(res), 4+len(buckets))
	}
	s.heard(ctx, err)
	if err != nil {
		s.onError(err)
		return nil, nil, 0, false
	}
	admitted, _ := res[0].(int64)
	epoch, _ := res[1].(string)
	waitMs, _ := res[2].(int64)
	seq, _ := res[3].(int64)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget()
	s.sawEpoch(epoch)
	t := make(spend.Totals, len(needs))
	j := 0
	for i, n := range needs {
		t[i] = make([]price.Micros, len(n.Count))
		for c := range n.Count {
			v, _ := res[4+j].(int64)
			t[i][c] = price.Micros(v)
			s.learn(buckets[j], price.Micros(v), epoch, seq, sent[j])
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
		if s.away() && !s.ping() {
			continue
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

// away reports whether Redis did not answer the last call, with no
// answer since.
func (s *Redis) away() bool { return s.awayNow.Load() }

// heard notes how a call to Redis made under ctx ended: one Redis did
// not answer starts an away spell, one it answered ends it. A call its
// caller gave up on (ctx cancelled, not timed out) says nothing of
// Redis.
func (s *Redis) heard(ctx context.Context, err error) {
	switch {
	case err == nil:
		s.awayNow.Store(false)
	case errors.Is(ctx.Err(), context.Canceled):
	default:
		s.awayNow.Store(true)
	}
}

// ping asks a Redis that did not answer whether it does now, changing
// nothing in it; its answer ends the away spell.
func (s *Redis) ping() bool {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	err := s.rdb.Ping(ctx).Err()
	s.heard(ctx, err)
	return err == nil
}

// alone decides while Redis does not answer, on this replica's share
// (shareView), keeping an admitted reservation to send later.
func (s *Redis) alone(needs []spend.Need, amount price.Micros) (spend.Totals, *spend.Refusal) {
	n := s.liveReplicas()
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.shareView(needs, n)
	if r := spend.Decide(needs, t); r != nil {
		return t, r
	}
	for _, need := range needs {
		s.pend(need.Reserve, amount)
	}
	return s.shareView(needs, n), nil
}

// shareView is the needs' totals as a replica deciding alone counts
// them, one of n live replicas: what Redis last told it, plus n times
// what it has added since (as if every replica spent as it did), its
// refunds counted once. Deciding on it, a replica admits while its own
// spend since is under 1/n of the headroom it last saw, so the fleet's
// spend while Redis is away stays within that headroom plus one
// request per replica. Under mu.
func (s *Redis) shareView(needs []spend.Need, n int) spend.Totals {
	t := make(spend.Totals, len(needs))
	for i, need := range needs {
		t[i] = make([]price.Micros, len(need.Count))
		for j, b := range need.Count {
			if k := s.known[b.ID]; k != nil {
				p := k.pending
				if p > 0 {
					p *= price.Micros(n)
				}
				t[i][j] = max(k.v+p, 0)
			}
		}
	}
	return t
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
	if s.away() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, b := range buckets {
			s.pend(b, delta)
		}
		return nil
	}
	keys := []string{s.epochKey()}
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
	for _, b := range buckets {
		keys = append(keys, floorKey(s.Key(b.ID)))
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := adjustScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err == nil && len(res) != 2+len(buckets) {
		err = fmt.Errorf("spend: the adjust script answered %d values, want %d", len(res), 2+len(buckets))
	}
	s.heard(ctx, err)
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
	seq, _ := res[1].(int64)
	s.sawEpoch(epoch)
	for j, b := range buckets {
		v, _ := res[2+j].(int64)
		s.learn(b, price.Micros(v), epoch, seq, sent[j])
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
