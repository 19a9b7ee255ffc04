package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/server/fleetstore"
)

// RedisStore keeps each day's records in one Redis hash,
// <prefix>usage:{YYYY-MM-DD}, shared by the fleet. Each replica (a
// writer, named by a random id) writes its own totals there, one field
// per row, writer and count (the row's names, the writer and a count's
// letter: n requests, i input, c cached input, o output, $ cost in µ$,
// k calls, joined by \x1f), and a day reads as the sum over writers.
// A write sets a field to the writer's total, or leaves it when it
// holds more (totals only grow), so writing a total again, late or
// twice, changes nothing: a retried flush counts once without any note
// of what landed, and a replica can write everything it knows again.
//
// That is what it does when the store loses its data (the fleet's
// epoch, fleetstore.EpochKey, changed; read in every write's script).
// Each writer keeps a ledger of the totals it wrote (in memory, and in
// state.dir/usage when Dir is set, appended and fsynced before Redis is
// sent a batch) and writes it back; a writer's entry in the registry
// (<prefix>usage:writers: whether it keeps a ledger on disk, and the
// first and last day it wrote) is written when it has. Records that no
// running writer holds (a writer gone with its ledger in memory, or
// with its state.dir not back yet) are marked: each replica remembers
// the registry as it last read it, and after a loss marks every writer
// it knew that has not written back in <prefix>usage:gaps, which the
// export reads to mark those days incomplete. A writer that writes back
// clears its own mark. See docs/USAGE.md, "When the store loses its
// data".
//
// Days written by Sluice before writers had their own fields (one
// HINCRBY total per row and count) are read too, added to the
// writers'. Each day's hash expires (EXPIREAT) retention days after
// the day ends, set at every write; Prune deletes the registry's and
// the marks' entries past the retention.
type RedisStore struct {
	c         redis.UniversalClient
	prefix    string
	retention int
	log       *slog.Logger
	onLoss    func(old, new string)
	settle    time.Duration

	mu sync.Mutex
	// writer names this replica's fields; label is what the log and the
	// marks call it (fleet.id); durable: its ledger is on disk.
	writer, label string
	durable       bool
	dir           string
	own           *ledger
	// dirty are the rows whose totals Redis may not have yet.
	dirty map[string]map[Row]bool
	// known is the fleet's epoch as this writer last read it ("" before
	// the first read).
	known string
	// restore is a write-back under way: after a loss, or at start for
	// what a ledger on disk holds that Redis may not.
	restore *restore
	// view is the registry and the marks as last read, in epoch view.epoch;
	// seen is the epoch and version the last write answered with.
	view     view
	seen     [2]string
	unsent   map[string]bool // durable: days appended that Redis may lack
	unsentAt time.Time
	// resentAt is when the recent days were last all marked dirty
	// (resendEvery).
	resentAt   time.Time
	gapSince   time.Time
	gapLogged  bool
	losses     atomic.Int64
	incomplete atomic.Int64
}

// restore is a write-back: the marks to write first (writer → entry),
// then the days to write (in order; written from the newest).
type restore struct {
	marks  map[string]string
	all    map[string]string // every mark, kept for a loss before the end
	days   []string
	rows   int
	since  time.Time
	loss   bool // after a loss, not at start
	marked int
}

// view is the registry and the marks (writer → entry) in an epoch.
type view struct {
	epoch, version string
	writers, gaps  map[string]string
}

// RedisOptions configure a RedisStore.
type RedisOptions struct {
	Prefix    string // fleet.prefix
	Retention int    // days a day is kept after it ends
	// Dir, when set (state.dir/usage), keeps this replica's ledger and
	// its writer's name on disk, so a restart keeps both: what it wrote
	// is written back after a loss even if it was down then. Without
	// it the ledger is in memory, at most MaxLedgerRows rows
	// (DefaultLedgerRows).
	Dir           string
	MaxLedgerRows int
	// Name is what the log and the marks call this replica (fleet.id).
	Name string
	Log  *slog.Logger
	// OnLoss, when set, hears each loss of Redis's data this store
	// finds (old and new epoch).
	OnLoss func(old, new string)
	// Settle is how long marks must stand before the log says records
	// are missing (default 3 s: writers that are up write back within
	// a flush or two).
	Settle time.Duration
}

// NewRedisStore returns a store in c's Redis, its keys starting with
// prefix (fleet.prefix), keeping days for retention days, its ledger in
// memory.
func NewRedisStore(c redis.UniversalClient, prefix string, retention int) *RedisStore {
	s, _ := OpenRedisStore(c, RedisOptions{Prefix: prefix, Retention: retention})
	return s
}

// OpenRedisStore returns a store in c's Redis configured by o. It fails
// only when o.Dir cannot be read or written.
func OpenRedisStore(c redis.UniversalClient, o RedisOptions) (*RedisStore, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Settle <= 0 {
		o.Settle = 3 * time.Second
	}
	if o.Retention <= 0 {
		o.Retention = 400
	}
	s := &RedisStore{c: c, prefix: o.Prefix, retention: o.Retention, log: o.Log, onLoss: o.OnLoss, settle: o.Settle,
		label: cleanLabel(o.Name), dir: o.Dir, dirty: map[string]map[Row]bool{}, unsent: map[string]bool{}}
	var files *FileStore
	if o.Dir != "" {
		var err error
		if files, err = NewFileStore(o.Dir); err != nil {
			return nil, err
		}
		s.durable = true
	}
	own, err := newLedger(files, o.MaxLedgerRows)
	if err != nil {
		return nil, fmt.Errorf("usage records in %s: %w", o.Dir, err)
	}
	s.own = own
	if !s.durable {
		s.writer = newID()
		return s, nil
	}
	if err := s.open(); err != nil {
		return nil, fmt.Errorf("usage records in %s: %w", o.Dir, err)
	}
	return s, nil
}

func cleanLabel(s string) string {
	s = strings.Join(strings.Fields(clean(s)), "_")
	if s == "" {
		return "-"
	}
	return s
}

// Where implements Store.
func (s *RedisStore) Where() string { return "redis" }

// Writer is the name this replica writes its fields under.
func (s *RedisStore) Writer() string { return s.writer }

// DayKey is the hash that holds day's records.
func (s *RedisStore) DayKey(day string) string { return s.prefix + "usage:{" + day + "}" }

func (s *RedisStore) registryKey() string { return s.prefix + "usage:writers" }
func (s *RedisStore) gapsKey() string     { return s.prefix + "usage:gaps" }

// syncScript writes a writer's totals and its registry entry. KEYS: the
// fleet's epoch, the registry, the marks, the day's hash (the registry
// again when no totals are sent). ARGV[1] a new epoch's name, ARGV[2]
// the epoch the writer knew, ARGV[3] the writer, ARGV[4] its registry
// entry ("": leave it), ARGV[5] its mark ("": leave it, "-": clear it,
// else the mark), ARGV[6] the day hash's expiry (Unix seconds), then
// field and total pairs. A field is set to the total unless it holds
// more. When the epoch is not the one the writer knew, Redis lost its
// data since: nothing is written, and the writer writes back what it
// holds first. Returns {epoch, the registry's version, 1 when lost}.
var syncScript = redis.NewScript(fleetstore.EpochLua + `
local id = fleetEpoch(KEYS[1], ARGV[1], ARGV[2])
if ARGV[2] ~= '' and id ~= ARGV[2] then
  return {id, '', 1}
end
for i = 7, #ARGV, 2 do
  local cur = tonumber(redis.call('HGET', KEYS[4], ARGV[i]) or '0') or 0
  if tonumber(ARGV[i + 1]) > cur then
    redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
  end
end
if #ARGV >= 7 then
  redis.call('EXPIREAT', KEYS[4], ARGV[6])
end
local changed = false
if ARGV[4] ~= '' and redis.call('HGET', KEYS[2], ARGV[3]) ~= ARGV[4] then
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
  changed = true
end
if ARGV[5] == '-' then
  if redis.call('HDEL', KEYS[3], ARGV[3]) == 1 then changed = true end
elseif ARGV[5] ~= '' and redis.call('HGET', KEYS[3], ARGV[3]) ~= ARGV[5] then
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[5])
  changed = true
end
if changed then
  redis.call('HINCRBY', KEYS[2], '~v', 1)
end
return {id, redis.call('HGET', KEYS[2], '~v') or '0', 0}
`)

// markScript marks, after a loss, the writers that have not written
// back. KEYS: the fleet's epoch, the registry, the marks. ARGV[1] a new
// epoch's name, ARGV[2] the epoch the caller knows, then writer and
// mark pairs: each writer without a registry entry is marked. Returns
// {epoch, how many marks it made}; nothing when the epoch moved again.
var markScript = redis.NewScript(fleetstore.EpochLua + `
local id = fleetEpoch(KEYS[1], ARGV[1], ARGV[2])
if id ~= ARGV[2] then
  return {id, -1}
end
local n = 0
for i = 3, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 and redis.call('HGET', KEYS[3], ARGV[i]) ~= ARGV[i + 1] then
    redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
    n = n + 1
  end
end
if n > 0 then
  redis.call('HINCRBY', KEYS[2], '~v', 1)
end
return {id, n}
`)

// viewScript reads the registry and the marks, if the epoch is still
// ARGV[1]. KEYS: the fleet's epoch, the registry, the marks. Returns
// {epoch} when it moved, else {epoch, registry, marks}.
var viewScript = redis.NewScript(`
local id = redis.call('HGET', KEYS[1], 'id')
if id ~= ARGV[1] then
  return {id or ''}
end
return {id, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3])}
`)

// resendEvery is how often a writer writes its last two days' totals
// again, all of them: a loss the epoch cannot show (a failover to a
// copy that lagged but kept the epoch, a day's hash evicted) is mended
// within it, for the days being written.
const resendEvery = 5 * time.Minute

// chunkRows bounds the rows one script writes, so a large batch does
// not hold Redis for long.
const chunkRows = 500

var letters = [6]string{"n", "i", "c", "o", "$", "k"}

func (c Counts) values() [6]int64 {
	return [6]int64{c.Requests, c.Input, c.CachedInput, c.Output, c.Cost, c.Calls}
}

// errLost is a write that found the store had lost its data; the
// write-back is under way (restore).
var errLost = errors.New("usage: the shared store lost its data")

// Add implements Store: recs go to the ledger (and its file), and the
// totals of their rows to Redis.
// REQUIRES: a batch that failed is added again, whole and in the same
// order, before any other (Recorder.Flush does so): only the last
// batch is remembered.
func (s *RedisStore) Add(ctx context.Context, id string, recs []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.durable {
		if err := s.noteUnsent(recs); err != nil {
			return err
		}
	}
	if err := s.own.add(id, recs); err != nil {
		return err
	}
	for _, r := range recs {
		d := s.dirty[r.Day]
		if d == nil {
			d = map[Row]bool{}
			s.dirty[r.Day] = d
		}
		d[r.Row] = true
	}
	s.trim()
	return s.sync(ctx)
}

// Sync writes what Redis may lack (rows not yet written, a write-back
// under way) and checks the fleet's epoch; the recorder calls it at
// every flush with nothing new, so an idle replica finds a loss too.
func (s *RedisStore) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sync(ctx)
}

// trim keeps in memory the days with rows to send and the last two.
// REQUIRES: s.mu held.
func (s *RedisStore) trim() {
	recent := ""
	if s.own.last != "" {
		if t, err := time.Parse(time.DateOnly, s.own.last); err == nil {
			recent = Day(t.AddDate(0, 0, -1))
		}
	}
	s.own.trim(func(day string) bool { return day >= recent || len(s.dirty[day]) > 0 })
}

// sync sends the dirty rows, then goes on with a write-back; a loss
// found on the way starts one and sends again, at most three times.
// REQUIRES: s.mu held.
func (s *RedisStore) sync(ctx context.Context) error {
	var err error
	for range 3 {
		if err = s.sendDirty(ctx); errors.Is(err, errLost) {
			continue
		}
		if err != nil {
			return err
		}
		if s.restore != nil {
			if err = s.restoreStep(ctx); errors.Is(err, errLost) {
				continue
			}
			if err != nil {
				return err
			}
		}
		return s.after(ctx)
	}
	return err
}

// entry is this writer's registry entry: "<1 on disk, 0 in memory>
// <first day> <last day> <label>".
func (s *RedisStore) entry() string {
	if s.own.first == "" {
		return ""
	}
	d := "0"
	if s.durable {
		d = "1"
	}
	return d + " " + s.own.first + " " + s.own.last + " " + s.label
}

// call runs syncScript for fields of day (none: day ""), with entry and
// mark as syncScript takes them. It notes the epoch and the registry's
// version the answer carries; a loss starts a write-back (errLost).
// REQUIRES: s.mu held.
func (s *RedisStore) call(ctx context.Context, day string, fields []any, entry, mark string) error {
	keys := []string{fleetstore.EpochKey(s.prefix), s.registryKey(), s.gapsKey(), s.registryKey()}
	expire := ""
	if day != "" {
		t, err := time.Parse(time.DateOnly, day)
		if err != nil {
			return fmt.Errorf("usage: record of day %q: %w", day, err)
		}
		keys[3] = s.DayKey(day)
		expire = strconv.FormatInt(t.AddDate(0, 0, 1+s.retention).Unix(), 10)
	}
	args := append([]any{fleetstore.NewEpochName(), s.known, s.writer, entry, mark, expire}, fields...)
	res, err := syncScript.Run(ctx, s.c, keys, args...).Slice()
	if err != nil {
		return err
	}
	if len(res) != 3 {
		return fmt.Errorf("usage: the store's answer %v is not {epoch, version, lost}", res)
	}
	id, _ := res[0].(string)
	version, _ := res[1].(string)
	if lost, _ := res[2].(int64); lost == 1 {
		s.lost(s.known, id)
		return errLost
	}
	if s.known == "" {
		s.known = id
		s.save()
	}
	s.seen = [2]string{id, version}
	return nil
}

// fields are rows' totals as syncScript takes them.
func (s *RedisStore) fields(rows map[Row]Counts, which []Row) []any {
	out := make([]any, 0, 2*len(letters)*len(which))
	for _, row := range which {
		c := rows[row]
		f := row.field() + sep + s.writer + sep
		for i, v := range c.values() {
			if v != 0 {
				out = append(out, f+letters[i], v)
			}
		}
	}
	return out
}

// sendDirty writes the dirty rows' totals, and the registry entry
// (unless a write-back is under way: the entry says the writer's
// records are whole); with none dirty, it checks the epoch alone.
// REQUIRES: s.mu held.
func (s *RedisStore) sendDirty(ctx context.Context) error {
	entry := s.entry()
	if s.restore != nil {
		entry = ""
	}
	days := make([]string, 0, len(s.dirty))
	for d, rows := range s.dirty {
		if len(rows) > 0 {
			days = append(days, d)
		} else {
			delete(s.dirty, d)
		}
	}
	sort.Strings(days)
	if len(days) == 0 {
		return s.call(ctx, "", nil, entry, "")
	}
	for _, day := range days {
		totals, err := s.own.load(day)
		if err != nil {
			return err
		}
		rows := make([]Row, 0, len(s.dirty[day]))
		for r := range s.dirty[day] {
			rows = append(rows, r)
		}
		for start := 0; start < len(rows); start += chunkRows {
			part := rows[start:min(start+chunkRows, len(rows))]
			if err := s.call(ctx, day, s.fields(totals, part), entry, ""); err != nil {
				return err
			}
			for _, r := range part {
				delete(s.dirty[day], r)
			}
		}
		delete(s.dirty, day)
	}
	return nil
}

// Read implements Store: day's rows, each the sum of every writer's
// totals (and of the totals written before writers had their own).
func (s *RedisStore) Read(ctx context.Context, day string, fn func(Record) error) error {
	rows := map[Row]*Counts{}
	var cursor uint64
	for {
		kv, next, err := s.c.HScan(ctx, s.DayKey(day), cursor, "*", 1000).Result()
		if err != nil {
			return err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p := strings.Split(kv[i], sep)
			if len(p) != 5 && len(p) != 6 { // the row's four names, [the writer,] the letter
				continue
			}
			v, err := strconv.ParseInt(kv[i+1], 10, 64)
			if err != nil {
				continue
			}
			row := Row{Key: p[0], Team: p[1], Model: p[2], Upstream: p[3]}
			c := rows[row]
			if c == nil {
				c = &Counts{}
				rows[row] = c
			}
			switch p[len(p)-1] {
			case "n":
				c.Requests += v
			case "i":
				c.Input += v
			case "c":
				c.CachedInput += v
			case "o":
				c.Output += v
			case "$":
				c.Cost += v
			case "k":
				c.Calls += v
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	for row, c := range rows {
		if err := fn(Record{Day: day, Row: row, Counts: *c}); err != nil {
			return err
		}
	}
	return nil
}

// Prune implements Store: Redis expires each day's hash itself; this
// drops the ledger's days before before, and the registry's and the
// marks' entries whose last day is before it.
func (s *RedisStore) Prune(ctx context.Context, before string) error {
	s.mu.Lock()
	err := s.own.prune(before)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	changed := false
	for _, key := range []string{s.registryKey(), s.gapsKey()} {
		all, err := s.c.HGetAll(ctx, key).Result()
		if err != nil {
			return err
		}
		for w, e := range all {
			if en, ok := parseEntry(e); ok && en.last < before {
				if err := s.c.HDel(ctx, key, w).Err(); err != nil {
					return err
				}
				changed = true
			}
		}
	}
	if changed {
		return s.c.HIncrBy(ctx, s.registryKey(), "~v", 1).Err()
	}
	return nil
}

// ledgerPath is where a durable writer keeps its name, the epoch it
// knew and the registry as it last read it.
func (s *RedisStore) ledgerPath() string { return filepath.Join(s.dir, "writer.json") }

var _ Store = (*RedisStore)(nil)
